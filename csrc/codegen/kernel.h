// From a store (value expression over realized storages, written through a view) to a
// loop nest with affine indices, and to C source.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "core/node.h"

namespace loom {

// An index: c + sum of coef[v] * var v.
struct Affine {
  int64_t c = 0;
  std::vector<int64_t> coef;
};

// One computed value of the kernel, in SSA form. Sources are indices into LKernel::nodes.
struct LNode {
  Op op;
  DType dtype;
  std::vector<int> src;
  Arg arg;              // the Node's argument (Const scalar, Reduce kind, Rand seed)
  int param = -1;       // Load, Gather: which buffer
  int check = -1;       // Check: local check number
  int slot = -1;        // Const value / Load offset / Iota's constant part read from an
                        // argument slot (batched kernels); Rand: its seed, and its offset
                        // in the next slot (with, batched, its index's constant part)
  Affine index;         // Load: element index; Iota: the coordinate; Rand: linear index
  std::vector<int> vars;  // Reduce/Scan: the loop variables it runs over
  const Node* origin = nullptr;  // Const, Rand: the node lowered (a kernel plan's slots)
};

// A further output of a store kernel (NOTE [Cohorts], schedule/fuse.cpp): a value over the
// same loops as the root, stored at its own index into buffer `param`.
struct LOutput {
  int root = -1;
  Affine index;
  DType dtype;
  int param = -1;
};

struct LKernel {
  std::vector<int64_t> var_size;
  std::vector<bool> is_output_var;  // output loop vs reduce/scan loop
  std::vector<LNode> nodes;
  int root = -1;
  Affine out_index;
  DType out_dtype;
  int scan_var = -1;  // the sequential output var of a scan kernel
  // A scatter writes at a computed index (node out_dyn), in order, on one thread unless its
  // rows are disjoint (scatter_rows_disjoint); with a combine kind the old element is
  // combined with the value instead of overwritten.
  int out_dyn = -1;
  int combine = -1;  // -1, or a ReduceKind (with kScatterScaled for index_add's alpha)
  // A batched kernel runs its store once per row of an argument table: Const values, Load
  // offsets and the output offset are slots of the row (slot_values: this store's row).
  bool batched = false;
  int out_slot = -1;
  std::vector<int64_t> slot_values;
  // A batched kernel may first fill its whole output (loads none): the buffer's pending
  // value below the batch, so a fresh tensor and its setitem loop are one kernel.
  std::shared_ptr<LKernel> prologue;
  std::vector<LOutput> extra;  // plain store kernels only
  // Fault messages of the kernel's Check nodes, by local check number.
  std::vector<int> checks;
  bool check_in_reduce = false;  // some Check runs inside a reduction loop
  std::vector<std::shared_ptr<Memory>> params;  // params[0] is the output
  std::vector<DType> param_dtype;
};

// A further value that a store kernel computes and stores: of the stored value's shape,
// written through `view` (of that shape too) into `mem`.
struct ExtraStore {
  View view;
  DType dtype;
  NodeRef value;
  std::shared_ptr<Memory> mem;
};

// Pass 1: the loop nest of `value` stored through `out` into `out_mem`, and of the `extra`
// stores beside it.
LKernel lower_store(const View& out, DType dtype, const NodeRef& value,
                    const std::shared_ptr<Memory>& out_mem,
                    const std::vector<ExtraStore>& extra = {});
// Pass 1 for one store of a batch: constants and offsets become argument slots, and
// loads of `self_flats` (earlier states of the stored buffer) read the output memory.
LKernel lower_batched_store(const View& out, DType dtype, const NodeRef& value,
                            const std::shared_ptr<Memory>& out_mem,
                            const std::vector<const Node*>& self_flats);
// Whether two lowered kernels are equal in everything but their slot values: stores whose
// kernels are alike can run as one batched kernel.
bool lkernels_alike(const LKernel& a, const LKernel& b);
// Pass 1 for a scatter: the loop nest over the index space of `value` and `index`.
LKernel lower_scatter(DType dtype, const NodeRef& value, const NodeRef& index, int combine,
                      const std::shared_ptr<Memory>& out_mem);
// Whether a scatter's outermost output loop may be split across threads: different
// iterations of it write different elements (NOTE [Parallel scatters]).
bool scatter_rows_disjoint(const LKernel& k);
// Whether such a scatter also has checks: its kernel then runs twice, checking on every
// thread before any writes (fault[2] says which pass). Its plan and its source both ask.
bool scatter_two_pass(const LKernel& k);
// Pass 2: merge adjacent loops that every index walks as one, drop size-1 loops.
void collapse_loops(LKernel& k);
// NOTE [Rebased buffers]: the smallest constant part of the indices into each buffer, taken
// out of them; the kernel then reads each buffer from a pointer that far in (0 for a buffer
// read at computed indices, and in batched kernels, whose offsets are slots already).
std::vector<int64_t> rebase_params(LKernel& k);
// Where each reduction is computed. NOTE [Hoisted reductions]: a reduction whose value
// depends on output loops only (a row max read back by every element of its row) is
// computed once per iteration of the deepest output loop it depends on, before the loops
// inside it open, so softmax's max and sum fuse into the kernel that uses them. `level`
// holds that loop's position among the output loops; -1 for a reduction that depends on
// none (and for nodes that are no reductions), which only kernels without output loops
// have when `ok`: all of theirs are computed once, sources first (a variance's mean is a
// value its sum of squares reads), or small kernels that run as one call (`whole`, NOTE
// [Whole reductions]); kNestedReduction inside another reduction's loop. `ok`
// is false when some reduction would be recomputed for loops it does not depend on (read
// through a broadcast along an outer loop, or nested in a reduction over a loop it does not
// depend on): the scheduler then computes it separately.
constexpr int kNestedReduction = -2;
struct ReducePlacement {
  std::vector<int> level;
  bool ok = true;
  bool whole = false;  // some reduction depends on no output loop although there are some
};
// The most loop points, whole reductions' aside, of a kernel with whole reductions (NOTE
// [Whole reductions]).
constexpr int64_t kWholeReduceMaxWork = int64_t(1) << 16;
ReducePlacement place_reductions(const LKernel& k);
// Whether some reduction, not placed, is computed again for the iterations of a loop that
// it does not depend on but a value reading it does. (A reduction over an expanded input
// stored as an expanded output is computed once per element stored, as eager computes it.)
bool recomputes_reductions(const LKernel& k);

// Pass 3: C source defining `void kernel(char**, int64_t start, int64_t end)` whose
// range is the outermost output loop.
std::string render_c(const LKernel& k);
// Whether an op leaves part of its work to a kernel's strict rerun (sin, cos and tan of a
// float: large arguments; fmod, remainder and floor division of a float: long quotients;
// NOTE [Deferred checks] in codegen/render_c.cpp).
bool has_strict_path(Op op, DType dtype);
std::string lkernel_str(const LKernel& k);

// Lowers, renders, compiles (cached) and runs the store kernel (or issues it to the
// executor, marking the memory it writes: Memory::written_by). A failed Check throws
// KernelFault (core/fault.h) after the kernel stopped.
void run_store_kernel(const View& out, DType dtype, const NodeRef& value,
                      const std::shared_ptr<Memory>& out_mem,
                      const std::vector<ExtraStore>& extra = {});
// place_reductions(...).ok for the store kernel of `value` through `out`, remembered by
// graph (NOTE [Kernel plans]).
bool reductions_placed(const View& out, DType dtype, const NodeRef& value);
// Runs stores lowered by lower_batched_store with equal signatures as one kernel, in order.
void run_batched_kernel(LKernel first, const std::vector<std::vector<int64_t>>& rows);
// The same for a scatter. When no Check runs inside a reduction, every index is checked
// before the first element is written, so a fault leaves out_mem as it was.
void run_scatter_kernel(DType dtype, const NodeRef& value, const NodeRef& index, int combine,
                        const std::shared_ptr<Memory>& out_mem);

}  // namespace loom
