// The C renderer's internals, shared by render_c.cpp (expressions, the kernel's loops),
// render_reduce.cpp (reductions), render_tiles.cpp (column, scan and transpose tiles) and
// render_layout.cpp (row caches, row prefetch, streaming stores).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel.h"
#include "codegen/ops_c.h"

namespace loom::c_render {

std::string var_name(const LKernel& k, int v);
std::string index_str(const LKernel& k, const Affine& a);

// Bytes of partial accumulators per vectorized reduction: 4 AVX2 / 2 AVX-512 registers.
inline constexpr int kLaneBytes = 128;
// Elements a sum's accumulator (each lane's) takes before it is added into the kernel's
// running sum and restarted (NOTE [Blocked sums]).
inline constexpr int64_t kSumBlock = 64;
// Vectorized reductions run in one loop nest (NOTE [Joint reductions]) up to this many:
// their partial accumulators then fill 12 of AVX2's 16 vector registers.
inline constexpr int kMaxLanedGroup = 3;
// Largest row of reduced values kept on the stack for the output loop to read back.
inline constexpr int64_t kMaxRowBytes = 64 << 10;
// Bytes of accumulators per block of a column reduction (column_tile).
inline constexpr int64_t kColumnBytes = 16 << 10;
// Rows whose scans along the innermost axis advance together (scan_tile).
inline constexpr int64_t kScanRows = 8;
// Bytes of results gathered on the stack per streamed block (NOTE [Streaming stores]):
// few, so that a block's arithmetic, its loads and its stores alternate finely (NOTE
// [Stream prefetch]). 1 KB blocks wrote 16 lines in a burst; in 256-byte blocks the 5-op
// chain over 16M floats took 5.2 ms where it took 6.3 (eight runs each, alternated in
// separate processes, caches flushed), the triad 5.85 where it took 6.03.
inline constexpr int64_t kStreamBytes = 256;
// How far ahead of a streamed block its contiguous loads are prefetched.
inline constexpr int64_t kStreamAheadBytes = 4 << 10;
// The shortest row of results that streams (NOTE [Streaming stores]).
inline constexpr int64_t kMinStreamRow = 1 << 10;
// Smallest input, in bytes, whose next row is prefetched (NOTE [Row prefetch]).
inline constexpr int64_t kPrefetchBytes = 1 << 20;

// Outputs of at least this many bytes are stored with non-temporal stores (NOTE
// [Streaming stores], render_layout.cpp).
int64_t stream_threshold();

// Renders one kernel: `os` collects the source, `scopes` the C names of the nodes
// computed so far, innermost scope last.
struct Renderer {
  const LKernel& k;
  std::ostringstream os;
  std::vector<std::unordered_map<int, std::string>> scopes;
  int in_lanes = 0;  // inside a vectorized reduction's lane loop (they do not nest)
  // Row caches: reduction id -> the output node that recomputes its summand per element.
  std::map<int, int> row_cache;
  // NOTE [Streaming stores]: results per streamed block (0: ordinary stores), and the
  // bounds of the block being written.
  int64_t stream_chunk = 0;
  std::string stream_lo, stream_hi;
  // NOTE [Stream prefetch]: the loads a streamed block cut from a longer loop prefetches.
  std::vector<int> stream_loads;
  // NOTE [Row prefetch]: the reduction whose loop prefetches the next row, the loads it
  // prefetches and the outermost output var they move with.
  int prefetch_host = -1, prefetch_row = -1;
  std::vector<int> prefetch_loads;
  // Where hoisted reductions are computed, when the kernel hoists them.
  const ReducePlacement* placement = nullptr;
  // NOTE [Row pipelining]: each row's results are written during the next row's last
  // pass; `base_scopes` counts the scopes outside the output loops.
  bool pipeline = false;
  // A scatter's indices were all checked before its loops (render): the checks in them
  // pass their values through.
  bool checks_done = false;
  // NOTE [Deferred checks]: the kernel's checks record a failure and pass a safe value on;
  // a rerun in strict mode stops at the first.
  bool defer_checks = false;
  size_t base_scopes = 0;
  // Reductions emitted in a joint loop, or about to be (NOTE [Joint reductions]).
  std::set<int> joined;

  explicit Renderer(const LKernel& kernel);

  void line(int depth, const std::string& s) { os << std::string(2 * depth, ' ') << s << "\n"; }

  const std::string* find(int id) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(id);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }

  std::string loop(const std::string& v, int64_t n) {
    return "for (int64_t " + v + " = 0; " + v + " < " + std::to_string(n) + "LL; ++" + v + ")";
  }

  int64_t coef(const Affine& a, int v) const { return v < int(a.coef.size()) ? a.coef[v] : 0; }

  // Whether `pred` holds for node `id` or a node it reads, directly or not.
  template <typename Pred>
  bool any_below(int id, Pred pred) const {
    std::vector<int> todo{id};
    std::vector<bool> seen(k.nodes.size());
    while (!todo.empty()) {
      int i = todo.back();
      todo.pop_back();
      if (seen[i]) continue;
      seen[i] = true;
      if (pred(i)) return true;
      for (int s : k.nodes[i].src) todo.push_back(s);
    }
    return false;
  }

  std::string slotted(int slot, const Affine& a) {
    if (slot < 0) return index_str(k, a);
    return "a[" + std::to_string(slot) + "] + " + index_str(k, a);
  }

  // The output vars the loops walk: all but a scan's.
  std::vector<int> output_vars() const {
    std::vector<int> outs;
    for (size_t v = 0; v < k.var_size.size(); ++v)
      if (k.is_output_var[v] && int(v) != k.scan_var) outs.push_back(int(v));
    return outs;
  }

  // render_c.cpp: the kernel function, its loops, expressions and reductions.
  std::string render(bool entry = true);
  // Opens the output loops (the outermost over [start, end), unless a batched kernel's
  // row loop holds that range); returns the body depth.
  int open_output_loops(bool ivdep, int depth = 1, bool all = true,
                        const ReducePlacement* hoist = nullptr);
  // NOTE [Invariant loads]: reads loads that move with none of the loops from the
  // innermost output loop in (`outer`: the output vars outside it) at `depth`, before it.
  void hoist_invariant_loads(const std::vector<int>& outer, int depth);
  std::string emit(int id, int depth);
  // Stores the kernel's outputs beside p0 (k.extra) at the current loop indices.
  void store_extras(int depth);
  std::string emit_reduce(int id, int depth);
  void hoist_invariant_terms(const std::vector<int>& group, int depth);
  int reduce_lanes(const LNode& n, ReduceKind kind, DType acc_t) const;
  DType reduce_acc_type(const LNode& n) const;
  // The accumulator of an argmax or argmin (NOTE [Float arg reductions]): the
  // C types and initial values of its running extreme and of its index.
  struct ArgAcc {
    ReduceKind kind = ReduceKind::ArgMax;
    bool keyed = false, wide = false, mx = true, narrow = false;
    std::string T, init, index_t;
  };
  ArgAcc arg_acc(const LNode& n) const;
  // One step of an arg reduction: element `v` at linear position `lin` (its index type's
  // expression) against the running extreme `acc` and its index `best`.
  static std::string arg_step(const ArgAcc& a, const std::string& acc, const std::string& best,
                              const std::string& lin, const std::string& v);
  // The linear position within the reduction's loops, in the index's type.
  std::string arg_position(const LNode& n, const ArgAcc& a) const;
  std::vector<int> partners(int id);
  bool reaches(int from, int to) const;
  bool nested_reduce(int id) const;
  static bool uses_gamma(const LKernel& k);
  static bool uses_special(const LKernel& k);
  static bool uses_op(const LKernel& k, Op op);
  static bool uses_any(const LKernel& k, std::initializer_list<Op> ops);
  // Ops whose own functions c_double_math_prelude has (float64's, float32 erfc).
  static bool uses_double_math(const LKernel& k);
  // Float64 sin, cos, tan (NOTE [Double trig]).
  static bool uses_double_trig(const LKernel& k);
  // Ops with a path left to the strict run (trig's large arguments, float fmod's long
  // quotients): their calls name `strict` and `loom_seen`.
  static bool uses_strict_paths(const LKernel& k);
  // Ends the kernel function (and adds the strict rerun, NOTE [Deferred checks]).
  void close_kernel();

  // render_tiles.cpp and render_layout.cpp: how the loops walk memory.
  int column_tile() const;
  void render_column_tiles(int tile, int depth);
  int scan_tile() const;
  void render_scan_tiles(int tile, int depth);
  void render_scan(int depth);
  int transpose_tile() const;
  int open_transpose_tiles(int tile, int depth);
  bool loads_contiguous(int id, int v) const;
  static constexpr int64_t kNotLinear = INT64_MIN;
  int64_t linear_coef(int id, int v) const;
  int64_t load_step(int id, int v) const;
  bool is_read(int id) const;
  void plan_stream_prefetch(int v);
  bool loads_below(int id, int target) const;
  void plan_row_caches(const ReducePlacement& hoist);
  bool same_expr(int a, int b, int r, int x) const;
  bool uses_var(int id, int v) const;
  bool scatter_rows_distinct() const;
  void declare_params();
  void render_index_checks();
  void render_scatter_store(int depth);
  void plan_prefetch(const ReducePlacement& hoist);
  void emit_prefetches(const std::string& ro, int lanes, int depth);
  int64_t stream_block() const;
  void open_stream_loop(int v, bool split, int& depth);
  void close_stream(const std::string& v, int& depth);
  bool plan_row_pipeline(const ReducePlacement& hoist) const;
  std::vector<int> row_reductions() const;
  std::string reduce_result_ctype(int id) const;
  std::string row_cache_ctype(int id) const;
  void bind_previous_row(const std::string& row, int depth);
  void emit_pipelined_block(const std::string& ro, int lanes, int depth);
  int open_row_pipeline(int depth);
};

}  // namespace loom::c_render
