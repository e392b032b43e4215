// Graph builders: the engine's C++ API for recording work on storages. Every function
// here only builds nodes; nothing runs until a buffer is realized (schedule/realize.h).
#pragma once

#include <mutex>
#include <optional>

#include "core/node.h"

namespace loom {

// NOTE [Buffer]: a Buffer is the engine state of one storage (the DataPtr context of a
// PrivateUse1 storage). `value` is the current value of the whole flat storage: Empty,
// Data, or a Store chain. A read is a Load of the value at the time of the read; a write
// replaces `value` with Store(old value, written elements, view). Every alias of the
// storage reads the same value, so every alias sees every write.
// Each write node records which buffer it was written into (Node::owner), so the scheduler
// can tell state that a live buffer builds on from a dead one's leftovers (NOTE [Live
// state] in schedule/fuse.cpp). The engine knows buffers by address: they are never
// copied or moved.
class Buffer {
 public:
  explicit Buffer(int64_t nbytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  const NodeRef& value() const { return value_; }
  void hold(NodeRef v);
  const int64_t nbytes;
  const uint64_t serial;  // creation order: sync() realizes buffers in it

 private:
  friend std::vector<Buffer*> live_buffers();
  friend struct BufferStats buffer_stats();
  NodeRef value_;
  std::shared_ptr<const void> alive_;  // expires with the buffer; write nodes keep weak refs
  // The registry of live buffers is a list through them (no allocation per buffer).
  Buffer* prev_ = nullptr;
  Buffer* next_ = nullptr;
};

// Every live buffer, oldest first, for sync(): the caller holds engine_mutex(). A fixed
// order keeps the schedule (which reader realizes a shared value) the same from run to run.
std::vector<Buffer*> live_buffers();
// How many buffers (storages) are alive and their bytes, realized or not.
struct BufferStats {
  int64_t count = 0, bytes = 0;
};
BufferStats buffer_stats();

// One lock guards the graph, buffers and the runtime: Python threads may record and
// realize concurrently, and each call holds it for its whole duration.
std::recursive_mutex& engine_mutex();

// NOTE [Graph bound]: values may pile up without a sync (`for ...: a = a + 1`). When a
// write leaves a buffer whose value would take more than kMaxPendingDepth nested steps to
// realize, the buffer is realized at once (by the hook the scheduler installs), so the
// recursion of fusion and realization stays bounded.
constexpr int32_t kMaxPendingDepth = 256;
void set_bound_hook(void (*realize_buffer)(Buffer&));

// NOTE [Split reductions]: a reduction to one value runs its one output on one thread. Over
// at least kSplitReduceMin elements reduce() makes it two: a reduced dim that kSplitReduce
// divides is cut into (kSplitReduce, size / kSplitReduce) by a reindex, the first reduction
// keeps that dim (kSplitReduce partial results, computed across threads) and the second
// combines them. Fusion stores the partials in a kernel of their own (fuse.cpp): hoisted
// into the second's kernel, they would run on its one thread again. Only the kinds whose
// partial results combine with the same kind (sum, prod, max, min, any, all) split. From
// 2^19 elements the second kernel pays for itself (x.sum() over float32, one kernel -> two:
// 512K 32 -> 21 us, 1M 144 -> 73, eager 36-42 and 144-177; 128K 8 -> 13, eager 5): it split
// from 2^22 before.
// A reduction to a few outputs (at most kSplitColumnsMax) that reads columns (its input's
// contiguous dim kept: batch-norm statistics of a channels-last tensor) splits the same
// way: blocks of its outputs each read a part of every row, all rows of the input per
// block, on one thread per block (64 channels' mean over 64x32x32: 1.29-1.54 ms, eager
// 1.25); split, each partial reads whole rows of its own.
constexpr int64_t kSplitReduce = 16;
constexpr int64_t kSplitReduceMin = int64_t(1) << 19;
constexpr int64_t kSplitColumnsMax = 256;

// --- reads and writes ---
NodeRef read(const Buffer& b, DType dtype, const View& view);
// `value` must have shape view.sizes and dtype `dtype`.
void write(Buffer& b, DType dtype, const View& view, const NodeRef& value);
// Elements of the storage at computed element indices: `index` is an Int64 value whose
// entries must already be valid (see check_index); the result has index's shape.
NodeRef gather(const Buffer& b, DType dtype, const NodeRef& index);
// Stores value[i] at element index[i] (equal shapes, index Int64 and checked), in index
// order; with `combine`, the stored value is combine(old, value[i]). `scaled` is index_add's
// alpha: `value` is binary(Mul, source, alpha), `combine` Sum, and a float storage adds
// the product with one rounding, old + source * alpha, as the CPU's add with an alpha. Any
// other product in `value` is rounded apart from the sum (NOTE [No contraction]).
void scatter(Buffer& b, DType dtype, const NodeRef& index, const NodeRef& value,
             std::optional<ReduceKind> combine, bool scaled = false);
// `index` (Int64) checked against [0, size), or [-size, size) wrapped to [0, size) when
// `wrap`; a kernel meeting any other value stops and reports fault message `msg`.
NodeRef check_index(const NodeRef& index, int64_t size, bool wrap, int msg);
// `divisor` (an integer value) as it is, checked not to be 0 (fault message `msg`).
NodeRef check_nonzero(const NodeRef& divisor, int msg);
// `value` (a float) as it is, checked to be at least 0 and not NaN (fault message `msg`).
NodeRef check_nonnegative(const NodeRef& value, int msg);
// Replaces the whole storage's value (an extern call's output, core/extern.h).
void set_value(Buffer& b, const NodeRef& flat);
// Host bytes as a new realized value of the whole storage.
void write_host(Buffer& b, const void* src, size_t nbytes);

// --- leaves ---
NodeRef constant(const Scalar& s, DType dtype, const Shape& shape);
NodeRef iota(DType dtype, const Shape& shape, int axis);  // the coordinate along `axis`
NodeRef rand_uniform(DType dtype, const Shape& shape, uint64_t seed, uint64_t offset);
NodeRef rand_normal(DType dtype, const Shape& shape, uint64_t seed, uint64_t offset);

// --- elementwise: sources of equal shape (use expand to broadcast) ---
NodeRef unary(Op op, const NodeRef& a);                    // result dtype of a (or Bool)
NodeRef binary(Op op, const NodeRef& a, const NodeRef& b);  // equal dtypes required
NodeRef where(const NodeRef& cond, const NodeRef& a, const NodeRef& b);
// a * b + c of floating values, rounded once (an fma): what the CPU's kernels compute for
// add and sub with an alpha (NOTE [No contraction] in codegen/render_c.cpp).
NodeRef mul_add(const NodeRef& a, const NodeRef& b, const NodeRef& c);
NodeRef cast(const NodeRef& a, DType dtype);
// Whether a complex value converts to bool by both parts (z != 0: torch 2.x) or by its real
// part (torch 1.13, the default); the binding sets it from the running torch.
void set_complex_to_bool_by_both_parts(bool both);
bool complex_to_bool_by_both_parts();

// --- movement of computed values ---
NodeRef expand(const NodeRef& a, const Shape& shape);  // numpy broadcasting, rank may grow
NodeRef reindex(const NodeRef& a, const Shape& shape, IndexMap map);

// Marks values of one shape as computed together when one of them is (NOTE [Cohorts]).
void make_cohort(const std::vector<NodeRef>& members);

// --- reductions: result keeps reduced dims with size 1 ---
NodeRef reduce(ReduceKind kind, const NodeRef& a, std::vector<int> axes, DType out);
// A running reduction of `a` along `axis`, accumulated in a's dtype and each element
// stored as `out` (the CPU's cumsum of float32 runs a double; NOTE [Scan accumulators]).
NodeRef scan(ReduceKind kind, const NodeRef& a, int axis, std::optional<DType> out = std::nullopt);

// Result dtype of an elementwise op on inputs of dtype `in`.
DType result_dtype(Op op, DType in);

}  // namespace loom
