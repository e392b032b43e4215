#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <unordered_map>

#include "codegen/kernel.h"
#include "codegen/ops_c.h"

namespace loom {

namespace {

std::string var_name(const LKernel& k, int v) {
  return (k.is_output_var[v] ? "x" : "r") + std::to_string(v);
}

std::string index_str(const LKernel& k, const Affine& a) {
  std::string s = std::to_string(a.c) + "LL";
  for (size_t v = 0; v < a.coef.size(); ++v) {
    if (!a.coef[v]) continue;
    s += " + " + var_name(k, int(v));
    if (a.coef[v] != 1) s += " * " + std::to_string(a.coef[v]) + "LL";
  }
  return s;
}

// Bytes of partial accumulators per vectorized reduction: 4 AVX2 / 2 AVX-512 registers.
constexpr int kLaneBytes = 128;
// Largest row of reduced values kept on the stack for the output loop to read back.
constexpr int64_t kMaxRowBytes = 64 << 10;
// Bytes of accumulators per block of a column reduction (column_tile).
constexpr int64_t kColumnBytes = 16 << 10;
// Bytes of results gathered on the stack per streamed block (NOTE [Streaming stores]).
constexpr int64_t kStreamBytes = 8 << 10;
// Smallest input, in bytes, whose next row is prefetched (NOTE [Row prefetch]).
constexpr int64_t kPrefetchBytes = 1 << 20;

// NOTE [Streaming stores]: an output larger than about half the last-level cache would not
// stay in it anyway, and each ordinary store of it first reads the line it writes (so a
// kernel writing 64 MB moves 128). Such a kernel gathers each block of kStreamBytes of
// results on the stack, where the innermost output loop vectorizes as before, then writes
// the block with non-temporal stores (loom_stream, c_stream_prelude). Softmax over
// 4096x4096 floats: 12.8 -> 10.2 ms on two threads here. The threshold comes from the
// machine's cache size (one instance of it: glibc's sysconf reports a whole socket's),
// as the compiler flags come from its instruction set. LOOM_STREAM_BYTES overrides it (0:
// never stream), read once: a plan must render the same source for the whole process.
int64_t stream_threshold() {
  static const int64_t bytes = []() -> int64_t {
    if (const char* e = std::getenv("LOOM_STREAM_BYTES")) {
      const int64_t n = std::atoll(e);
      return n > 0 ? n : INT64_MAX;
    }
    int64_t l3 = 32 << 20;
    if (std::FILE* f = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r")) {
      long n = 0;
      char unit = 0;
      if (std::fscanf(f, "%ld%c", &n, &unit) >= 1 && n > 0)
        l3 = int64_t(n) << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
      std::fclose(f);
    }
    return std::max<int64_t>(l3 / 2, 4 << 20);
  }();
  return bytes;
}

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
  // NOTE [Row prefetch]: the reduction whose loop prefetches the next row, the loads it
  // prefetches and the outermost output var they move with.
  int prefetch_host = -1, prefetch_row = -1;
  std::vector<int> prefetch_loads;

  explicit Renderer(const LKernel& kernel) : k(kernel) {}

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

  // Emits the statements computing node `id` at this depth; returns its C name.
  std::string emit(int id, int depth) {
    if (const std::string* s = find(id)) return *s;
    const LNode& n = k.nodes[id];
    std::string name = "v" + std::to_string(id);
    const std::string T = compute_ctype(n.dtype);
    std::string e;
    switch (n.op) {
      case Op::Load:
        e = c_load(n.dtype, "p" + std::to_string(n.param) + "[" + slotted(n.slot, n.index) + "]");
        break;
      case Op::Gather:
        e = c_load(n.dtype, "p" + std::to_string(n.param) + "[" + emit(n.src[0], depth) + "]");
        break;
      case Op::Check: {
        const CheckArg& c = std::get<CheckArg>(n.arg);
        std::string x = emit(n.src[0], depth), size = std::to_string(c.size) + "LL";
        if (c.nonzero) {
          line(depth, "const " + T + " " + name + " = " + x + ";");
          line(depth, "if (" + name + " == 0) { loom_fault(fault, " + std::to_string(n.check) +
                          ", 0); return; }");
          scopes.back()[id] = name;
          return name;
        }
        e = c.wrap ? "(" + x + " < 0 ? " + x + " + " + size + " : " + x + ")" : x;
        line(depth, "const int64_t " + name + " = " + e + ";");
        line(depth, "if ((uint64_t)" + name + " >= (uint64_t)" + size + ") { loom_fault(fault, " +
                        std::to_string(n.check) + ", " + x + "); return; }");
        scopes.back()[id] = name;
        return name;
      }
      case Op::Const:
        if (n.slot < 0)
          e = c_literal(std::get<Scalar>(n.arg), n.dtype);
        else if (is_floating(n.dtype))
          e = "(" + T + ")loom_i2d(a[" + std::to_string(n.slot) + "])";
        else if (is_complex(n.dtype))  // real and imaginary parts in two slots
          e = "__builtin_complex(loom_i2d(a[" + std::to_string(n.slot) + "]), loom_i2d(a[" +
              std::to_string(n.slot + 1) + "]))";
        else if (n.dtype == DType::Bool)
          e = "(uint8_t)(a[" + std::to_string(n.slot) + "] != 0)";
        else
          e = "(" + T + ")a[" + std::to_string(n.slot) + "]";
        break;
      case Op::Iota:
        e = "(" + T + ")(" + index_str(k, n.index) + ")";
        break;
      case Op::RandUniform:
      case Op::RandNormal: {
        const RandArg& r = std::get<RandArg>(n.arg);
        std::string i = "(uint64_t)(" + std::to_string(r.offset) + "ULL + (uint64_t)(" +
                        index_str(k, n.index) + "))";
        std::string seed = std::to_string(r.seed) + "ULL";
        if (n.op == Op::RandNormal)
          e = "(" + T + ")loom_normal(" + seed + ", " + i + ")";
        else if (n.dtype == DType::Float64)
          e = "loom_uniform(" + seed + ", " + i + ")";
        else
          e = "loom_uniformf(" + seed + ", " + i + ")";
        e = c_cast(n.dtype == DType::Float64 ? DType::Float64 : DType::Float32, n.dtype, e);
        break;
      }
      case Op::Cast:
      case Op::Bitcast:
        e = c_cast(k.nodes[n.src[0]].dtype, n.dtype, emit(n.src[0], depth));
        break;
      case Op::Reduce:
        return emit_reduce(id, depth);
      default: {
        std::vector<std::string> args;
        for (int s : n.src) args.push_back(emit(s, depth));
        DType in = k.nodes[n.src.back()].dtype;  // Where's condition is first
        e = c_op(n.op, in, n.dtype, args);
      }
    }
    line(depth, "const " + T + " " + name + " = " + e + ";");
    scopes.back()[id] = name;
    return name;
  }

  // NOTE: a float Sum/Prod/Max/Min over a long innermost loop runs as kLaneBytes of
  // independent partial accumulators (lane l takes every element l mod lanes) folded
  // pairwise at the end: gcc vectorizes that without reassociating anything
  // (-ffast-math stays off). Max/Min keep NaN sticky in every lane and in the fold.
  int reduce_lanes(const LNode& n, ReduceKind kind, DType acc_t) const {
    if (n.vars.empty() || !is_floating(acc_t) || in_lanes) return 0;
    if (kind != ReduceKind::Sum && kind != ReduceKind::Prod && kind != ReduceKind::Max &&
        kind != ReduceKind::Min)
      return 0;
    int lanes = kLaneBytes / (acc_t == DType::Float64 ? 8 : 4);
    return k.var_size[n.vars.back()] >= 2 * lanes ? lanes : 0;
  }

  std::string emit_reduce(int id, int depth) {
    const LNode& n = k.nodes[id];
    const ReduceKind kind = std::get<ReduceArg>(n.arg).kind;
    const bool arg = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin ||
                     kind == ReduceKind::PoolArgMax;
    const bool mx = kind != ReduceKind::ArgMin;
    DType vt = k.nodes[n.src[0]].dtype;
    DType acc_t = arg ? vt : n.dtype;
    std::string T = compute_ctype(acc_t), init = c_reduce_init(kind, acc_t);
    // NOTE [Float arg reductions]: a float argmax/argmin compares integer keys that order
    // as the values do (-0.0 as 0.0), NaN above (argmax) or below (argmin) every number,
    // so that the first NaN, else the first extreme, wins with one strict comparison.
    // Written on the floats (`v > acc || v != v && acc == acc`), gcc kept a branch, which
    // a pooling window mispredicts about half the time (20x slower).
    const bool keyed = arg && is_floating(vt);
    const bool wide = keyed && vt == DType::Float64;
    if (keyed) {
      T = wide ? "int64_t" : "int32_t";
      init = std::string(wide ? "INT64" : "INT32") + (mx ? "_MIN" : "_MAX");
    }
    std::string acc = "acc" + std::to_string(id), best = "idx" + std::to_string(id);
    const int lanes = reduce_lanes(n, kind, acc_t);
    const std::string lacc = "lacc" + std::to_string(id), l = "l" + std::to_string(id);
    const std::string L = std::to_string(lanes) + "LL";
    line(depth, T + " " + acc + " = " + init + ";");
    if (arg) line(depth, "int64_t " + best + " = 0;");
    auto cached = row_cache.find(id);
    const std::string row = "row" + std::to_string(id);
    if (cached != row_cache.end())
      line(depth, std::string(compute_ctype(vt)) + " " + row + "[" +
                      std::to_string(k.var_size[n.vars[0]]) + "LL];");
    if (lanes) {
      line(depth, T + " " + lacc + "[" + L + "];");
      line(depth, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") " + lacc + "[" +
                      l + "] = " + init + ";");
    }
    int d = depth;
    std::string lin = "0";
    for (size_t i = 0; i < n.vars.size(); ++i) {
      int v = n.vars[i];
      lin = "(" + lin + ") * " + std::to_string(k.var_size[v]) + "LL + " + var_name(k, v);
      if (!lanes || i + 1 < n.vars.size()) line(d++, loop(var_name(k, v), k.var_size[v]) + " {");
    }
    auto body = [&](int at) {
      scopes.emplace_back();
      std::string v = emit(n.src[0], at);
      if (cached != row_cache.end())
        line(at, row + "[" + var_name(k, n.vars[0]) + "] = " + v + ";");
      if (keyed) {
        const std::string nan_key = std::string(wide ? "INT64" : "INT32") + (mx ? "_MAX" : "_MIN");
        // PoolArgMax takes every NaN (the only key equal to nan_key), so the last one wins;
        // an integer test, which gcc keeps branch-free where `v != v` became a branch.
        const std::string also = kind == ReduceKind::PoolArgMax ? " | (k_ == " + nan_key + ")" : "";
        line(at, "{ const " + T + " k_ = " + v + " != " + v + " ? " + nan_key + " : " +
                     (wide ? "loom_dkey(" : "loom_fkey(") + v + "); const int t_ = (k_" +
                     (mx ? " > " : " < ") + acc + ")" + also + "; " + acc + " = t_ ? k_ : " + acc +
                     "; " + best + " = t_ ? " + lin + " : " + best + "; }");
      } else if (arg) {
        const char* cmp = mx ? " > " : " < ";
        // The first NaN, else the first extreme. Computed without a branch (NOTE [NaN-sticky
        // max]): a branch on data is mispredicted about half the time in a pooling window.
        line(at, "{ const int t_ = (" + v + cmp + acc + ") | ((" + v + " != " + v + ") & (" + acc +
                     " == " + acc + ")); " + acc + " = t_ ? " + v + " : " + acc + "; " + best +
                     " = t_ ? " + lin + " : " + best + "; }");
      } else if (lanes) {
        std::string a = lacc + "[" + l + "]";
        line(at, a + " = " + c_reduce_combine(kind, acc_t, a, v) + ";");
      } else {
        line(at, c_reduce_step(kind, acc_t, acc, v));
      }
      scopes.pop_back();
    };
    if (lanes) {
      // Whole blocks of `lanes` elements, then the remainder in lanes 0.. of the last block.
      const std::string r = var_name(k, n.vars.back()), ro = r + "o";
      const int64_t size = k.var_size[n.vars.back()], main = size / lanes * lanes;
      line(d++, "for (int64_t " + ro + " = 0; " + ro + " < " + std::to_string(main) + "LL; " + ro +
                    " += " + L + ") {");
      if (id == prefetch_host) emit_prefetches(ro, lanes, d);
      // `omp simd` (-fopenmp-simd) keeps the lane loop whole until it is vectorized, and
      // the accumulators in registers; it allows no `return`, which a Check needs.
      line(d, k.check_in_reduce ? "#pragma GCC unroll 1" : "#pragma omp simd");
      line(d++, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") {");
      line(d, "const int64_t " + r + " = " + ro + " + " + l + ";");
      ++in_lanes;
      body(d);
      --in_lanes;
      line(--d, "}");
      line(--d, "}");
      if (size > main) {
        line(d++, "for (int64_t " + l + " = 0; " + l + " < " + std::to_string(size - main) +
                      "LL; ++" + l + ") {");
        line(d, "const int64_t " + r + " = " + std::to_string(main) + "LL + " + l + ";");
        body(d);
        line(--d, "}");
      }
    } else {
      if (n.vars.empty()) line(d++, "{");  // loops of size 1 were dropped: a block still
      body(d);                              // keeps the body's names to itself
    }
    while (d > depth) line(--d, "}");
    if (lanes) {
      for (int h = lanes / 2; h > 0; h /= 2) {
        std::string hs = std::to_string(h) + "LL";
        line(depth, "for (int64_t " + l + " = 0; " + l + " < " + hs + "; ++" + l + ") " + lacc +
                        "[" + l + "] = " +
                        c_reduce_combine(kind, acc_t, lacc + "[" + l + "]",
                                         lacc + "[" + l + " + " + hs + "]") +
                        ";");
      }
      line(depth, acc + " = " + lacc + "[0];");
    }
    std::string name = arg ? best : acc;
    scopes.back()[id] = name;
    return name;
  }

  int64_t coef(const Affine& a, int v) const { return v < int(a.coef.size()) ? a.coef[v] : 0; }

  // True when some load below node `id` walks var `v` contiguously.
  bool loads_contiguous(int id, int v) const {
    std::vector<int> todo{id};
    std::vector<bool> seen(k.nodes.size());
    while (!todo.empty()) {
      int i = todo.back();
      todo.pop_back();
      if (seen[i]) continue;
      seen[i] = true;
      const LNode& n = k.nodes[i];
      if (n.op == Op::Load && coef(n.index, v) == 1) return true;
      for (int s : n.src) todo.push_back(s);
    }
    return false;
  }

  // NOTE: a reduction over a non-innermost axis (x.sum(0)) would walk memory with a
  // stride, one output at a time. Instead the innermost output loop is cut into blocks:
  // each block's reductions accumulate a row of outputs per step (the inner loop walks
  // contiguous inputs and vectorizes), then the epilogue and store run over the block.
  // Returns the tile's size, or 0 when the kernel is not shaped for it.
  int column_tile() const {
    if (k.batched || k.out_dyn >= 0 || k.scan_var >= 0 || k.check_in_reduce) return 0;
    std::vector<int> outs = output_vars();
    if (outs.empty()) return 0;
    const int xi = outs.back();
    if (coef(k.out_index, xi) != 1) return 0;
    int tile = 0, acc_bytes = 0;
    bool column = false;
    for (size_t i = 0; i < k.nodes.size(); ++i) {
      const LNode& n = k.nodes[i];
      if (n.op != Op::Reduce) continue;
      const ReduceKind kind = std::get<ReduceArg>(n.arg).kind;
      if (kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin ||
          kind == ReduceKind::PoolArgMax || n.vars.empty())
        return 0;
      for (size_t j = 0; j < i; ++j)  // a reduction below a reduction
        if (k.nodes[j].op == Op::Reduce && loads_below(int(i), int(j))) return 0;
      if (!loads_contiguous(n.src[0], xi)) return 0;
      column |= !loads_contiguous(n.src[0], n.vars.back());
      tile = std::max(tile, 4 * kLaneBytes / std::max(4, itemsize(n.dtype)));
      acc_bytes += std::max(4, itemsize(n.dtype));
    }
    if (!column || k.var_size[xi] < 8) return 0;
    // The accumulators of a block fill kColumnBytes of L1: each step then reads a long
    // contiguous piece of its row. Blocks of 128 floats read 512 bytes per row, a new
    // page each time for rows of 16 KB (x.sum(0) over 4096x4096: 9 -> 4 ms).
    return std::max(tile, int(kColumnBytes / acc_bytes) / tile * tile);
  }

  bool loads_below(int id, int target) const {
    std::vector<int> todo{k.nodes[id].src[0]};
    std::vector<bool> seen(k.nodes.size());
    while (!todo.empty()) {
      int i = todo.back();
      todo.pop_back();
      if (i == target) return true;
      if (seen[i]) continue;
      seen[i] = true;
      for (int s : k.nodes[i].src) todo.push_back(s);
    }
    return false;
  }

  // The tiled kernel body (see column_tile) inside the outer output loops at `depth`.
  void render_column_tiles(int tile, int depth) {
    std::vector<int> outs = output_vars();
    const int xi = outs.back();
    const std::string x = var_name(k, xi), xb = x + "b", T = std::to_string(tile) + "LL";
    const bool split = outs.size() == 1;  // the thread range is this loop's
    const std::string lo = split ? "start" : "0";
    const std::string hi = split ? "end" : std::to_string(k.var_size[xi]) + "LL";
    // One block of `nb` outputs: each reduction accumulates them, then the epilogue stores.
    auto block = [&](const std::string& nb, int depth) {
      scopes.emplace_back();
      std::vector<std::pair<int, std::string>> accs;
      for (size_t i = 0; i < k.nodes.size(); ++i) {
        const LNode& n = k.nodes[i];
        if (n.op != Op::Reduce) continue;
        const ReduceKind kind = std::get<ReduceArg>(n.arg).kind;
        const std::string acc = "acc" + std::to_string(i), init = c_reduce_init(kind, n.dtype);
        line(depth, std::string(compute_ctype(n.dtype)) + " " + acc + "[" + T + "];");
        line(depth, "for (int64_t j_ = 0; j_ < " + T + "; ++j_) " + acc + "[j_] = " + init + ";");
        int d = depth;
        for (int v : n.vars) line(d++, loop(var_name(k, v), k.var_size[v]) + " {");
        line(d, "#pragma omp simd");
        line(d++, "for (int64_t j_ = 0; j_ < " + nb + "; ++j_) {");
        line(d, "const int64_t " + x + " = " + xb + " + j_;");
        scopes.emplace_back();
        ++in_lanes;
        std::string v = emit(n.src[0], d);
        --in_lanes;
        scopes.pop_back();
        line(d, acc + "[j_] = " + c_reduce_combine(kind, n.dtype, acc + "[j_]", v) + ";");
        while (d > depth) line(--d, "}");
        accs.emplace_back(int(i), acc + "[j_]");
      }
      line(depth, k.checks.empty() ? "#pragma omp simd" : "#pragma GCC ivdep");
      line(depth++, "for (int64_t j_ = 0; j_ < " + nb + "; ++j_) {");
      line(depth, "const int64_t " + x + " = " + xb + " + j_;");
      scopes.emplace_back();
      for (auto& [id, name] : accs) scopes.back()[id] = name;
      std::string v = emit(k.root, depth);
      line(depth, "p0[" + index_str(k, k.out_index) + "] = " + c_store(k.out_dtype, v) + ";");
      scopes.pop_back();
      line(--depth, "}");
      scopes.pop_back();
    };
    line(depth++, "for (int64_t " + xb + " = " + lo + "; " + xb + " < " + hi + "; " + xb +
                      " += " + T + ") {");
    // Whole blocks have a constant trip count, which keeps the accumulators in registers.
    const bool whole = !split && k.var_size[xi] % tile == 0, part = split || !whole;
    if (part && k.var_size[xi] >= tile)
      line(depth++, "if (" + hi + " - " + xb + " >= " + T + ") {");
    if (whole || k.var_size[xi] >= tile) block(T, depth);
    if (part && k.var_size[xi] >= tile) line(depth - 1, "} else {");
    if (part) {
      line(depth, "const int64_t nb_ = " + hi + " - " + xb + " < " + T + " ? " + hi + " - " + xb +
                      " : " + T + ";");
      block("nb_", depth);
    }
    if (part && k.var_size[xi] >= tile) line(--depth, "}");
    line(--depth, "}");
  }

  // Whether node a (of a reduction's body, over var r) computes what node b (of the
  // output expression, over output var x) computes, with r standing for x.
  bool same_expr(int a, int b, int r, int x) const {
    if (a == b) return true;
    const LNode &na = k.nodes[a], &nb = k.nodes[b];
    const bool same_slot = na.slot == nb.slot ||
                           (na.op == Op::Const && na.slot >= 0 && nb.slot >= 0 &&
                            k.slot_values[size_t(na.slot)] == k.slot_values[size_t(nb.slot)]);
    if (na.op != nb.op || na.dtype != nb.dtype || na.param != nb.param || !same_slot ||
        na.op == Op::Reduce || na.op == Op::Check || na.src.size() != nb.src.size() ||
        !(na.arg == nb.arg))
      return false;
    if (na.index.c != nb.index.c) return false;
    for (int v = 0; v < int(k.var_size.size()); ++v)  // b's var v is a's var va
      if (coef(nb.index, v) != coef(na.index, v == x ? r : v == r ? x : v)) return false;
    for (size_t i = 0; i < na.src.size(); ++i)
      if (!same_expr(na.src[i], nb.src[i], r, x)) return false;
    return true;
  }

  bool uses_var(int id, int v) const {
    const LNode& n = k.nodes[id];
    if (coef(n.index, v) != 0) return true;
    for (int s : n.src)
      if (uses_var(s, v)) return true;
    return false;
  }

  // NOTE: softmax's output recomputes exp(x - max) that its sum already computed, element
  // for element. When a reduction placed outside the innermost output loop sums a value
  // that the output expression computes again along that loop, the reduction keeps its
  // values in a row on the stack (up to kMaxRowBytes) and the output reads them back.
  void plan_row_caches(const ReducePlacement& hoist) {
    std::vector<int> outs = output_vars();
    if (outs.empty() || k.check_in_reduce) return;
    const int x = outs.back(), inner = int(outs.size()) - 1;
    for (size_t id = 0; id < k.nodes.size(); ++id) {
      const LNode& n = k.nodes[id];
      if (n.op != Op::Reduce || hoist.level[id] < 0 || hoist.level[id] >= inner ||
          n.vars.size() != 1)
        continue;
      const int r = n.vars[0];
      const LNode& b = k.nodes[n.src[0]];
      if (b.op == Op::Load || b.op == Op::Cast || op_kind(b.op) == OpKind::Leaf) continue;
      if (k.var_size[r] != k.var_size[x] ||
          k.var_size[r] * itemsize(b.dtype == DType::Float64 ? b.dtype : DType::Float32) >
              kMaxRowBytes)
        continue;
      for (size_t m = 0; m < k.nodes.size(); ++m)
        if (k.nodes[m].op == b.op && uses_var(int(m), x) && !uses_var(int(m), r) &&
            same_expr(n.src[0], int(m), r, x)) {
          row_cache[int(id)] = int(m);
          break;
        }
    }
  }

  // NOTE [Row prefetch]: a row kernel (softmax, layer norm) reads each row from memory in
  // its first pass over it, and its later passes work on the row in cache: memory and
  // arithmetic take turns. When two or more vectorized reductions run per row, the last
  // one prefetches, a cache line at a time, what the first one's contiguous loads will
  // read for the next row, so that the next row arrives while this one computes (softmax
  // over 4096x4096 floats: 14 -> 11-12.8 ms on two threads here).
  void plan_prefetch(const ReducePlacement& hoist) {
    const std::vector<int> outs = output_vars();
    if (outs.empty()) return;
    std::vector<int> passes;
    for (size_t id = 0; id < k.nodes.size(); ++id) {
      const LNode& n = k.nodes[id];
      if (n.op == Op::Reduce && hoist.level[id] == 0 && n.vars.size() == 1 &&
          reduce_lanes(n, std::get<ReduceArg>(n.arg).kind, n.dtype) > 0)
        passes.push_back(int(id));
    }
    if (passes.size() < 2) return;
    const int x0 = outs[0], r = k.nodes[passes.front()].vars[0];
    if (k.var_size[k.nodes[passes.back()].vars[0]] != k.var_size[r]) return;
    std::vector<int> todo{k.nodes[passes.front()].src[0]}, loads;
    std::vector<bool> seen(k.nodes.size());
    while (!todo.empty() && loads.size() < 4) {
      const int i = todo.back();
      todo.pop_back();
      if (seen[i]) continue;
      seen[i] = true;
      const LNode& n = k.nodes[i];
      if (n.op == Op::Reduce) continue;
      for (int s : n.src) todo.push_back(s);
      if (n.op != Op::Load || n.slot >= 0 || coef(n.index, r) != 1 || coef(n.index, x0) == 0 ||
          k.var_size[x0] * k.var_size[r] * itemsize(n.dtype) < kPrefetchBytes)
        continue;
      bool row_only = true;
      for (int v = 0; v < int(k.var_size.size()); ++v)
        row_only &= v == x0 || v == r || !coef(n.index, v);
      if (row_only) loads.push_back(i);
    }
    if (loads.empty()) return;
    prefetch_host = passes.back();
    prefetch_row = x0;
    prefetch_loads = loads;
  }

  // The prefetches of one block of `lanes` elements starting at `ro` (NOTE [Row prefetch]).
  void emit_prefetches(const std::string& ro, int lanes, int depth) {
    for (int id : prefetch_loads) {
      const LNode& n = k.nodes[id];
      const int64_t size = itemsize(n.dtype), step = std::max<int64_t>(1, 64 / size);
      const std::string at = "p" + std::to_string(n.param) + "[" + std::to_string(n.index.c) +
                             "LL + (" + var_name(k, prefetch_row) + " + 1) * " +
                             std::to_string(coef(n.index, prefetch_row)) + "LL + " + ro;
      for (int64_t j = 0; j < std::max<int64_t>(1, lanes * size / 64); ++j)
        line(depth, "__builtin_prefetch(&" + at + " + " + std::to_string(j * step) + "LL], 0, 3);");
    }
  }

  // Results per streamed block, or 0 (NOTE [Streaming stores]): a plain kernel whose
  // innermost output loop writes contiguously and whose output is large.
  int64_t stream_block() const {
    if (k.batched || k.out_dyn >= 0 || k.scan_var >= 0 || k.check_in_reduce ||
        !k.checks.empty() || k.out_slot >= 0 || column_tile())
      return 0;
    const std::vector<int> outs = output_vars();
    if (outs.empty() || coef(k.out_index, outs.back()) != 1) return 0;
    const int64_t size = itemsize(k.out_dtype);
    int64_t n = 1;
    for (int v : outs) n *= k.var_size[v];
    if (n * size < stream_threshold()) return 0;
    const int64_t chunk = kStreamBytes / size, inner = k.var_size[outs.back()];
    // A row of up to two blocks is one block, with its loop's constant trip count.
    return outs.size() > 1 && inner <= 2 * chunk ? inner : chunk;
  }

  // The innermost output loop of a streaming kernel, over var v: blocks of stream_chunk
  // results gathered in `orow`, each written out after its loop (close_stream).
  void open_stream_loop(int v, bool split, int& depth) {
    const std::string x = var_name(k, v), C = std::to_string(stream_chunk) + "LL";
    const std::string lo = split ? "start" : "0";
    const std::string hi = split ? "end" : std::to_string(k.var_size[v]) + "LL";
    const std::string row =
        c_storage_type(k.out_dtype) + " orow[" + C + "] __attribute__((aligned(64)));";
    if (!split && stream_chunk == k.var_size[v]) {
      stream_lo = "0LL";
      stream_hi = hi;
      line(depth, row);
      line(depth, "#pragma GCC ivdep");
      line(depth++, loop(x, k.var_size[v]) + " {");
      return;
    }
    stream_lo = x + "o";
    stream_hi = x + "e";
    line(depth++, "for (int64_t " + stream_lo + " = " + lo + "; " + stream_lo + " < " + hi + "; " +
                      stream_lo + " += " + C + ") {");
    line(depth, "const int64_t " + stream_hi + " = " + hi + " - " + stream_lo + " < " + C +
                    " ? " + hi + " : " + stream_lo + " + " + C + ";");
    line(depth, row);
    line(depth, "#pragma GCC ivdep");
    line(depth++, "for (int64_t " + x + " = " + stream_lo + "; " + x + " < " + stream_hi +
                      "; ++" + x + ") {");
  }

  // Stores value `v` of a streaming kernel into its block and, closing the innermost
  // output loop, writes the block out.
  void close_stream(const std::string& v, int& depth) {
    const std::string x = var_name(k, output_vars().back());
    line(depth, "orow[" + x + " - " + stream_lo + "] = " + c_store(k.out_dtype, v) + ";");
    line(--depth, "}");
    line(depth, "{ const int64_t " + x + " = " + stream_lo + "; loom_stream(&p0[" +
                    index_str(k, k.out_index) + "], orow, (" + stream_hi + " - " + stream_lo +
                    ") * (int64_t)sizeof(orow[0])); }");
  }

  std::string slotted(int slot, const Affine& a) {
    if (slot < 0) return index_str(k, a);
    return "a[" + std::to_string(slot) + "] + " + index_str(k, a);
  }

  // Opens the output loops (the outermost over [start, end), unless a batched kernel's
  // row loop holds that range); returns the body depth.
  std::vector<int> output_vars() const {
    std::vector<int> outs;
    for (size_t v = 0; v < k.var_size.size(); ++v)
      if (k.is_output_var[v] && int(v) != k.scan_var) outs.push_back(int(v));
    return outs;
  }

  // `hoist`: reductions placed at output loop i (place_reductions) are emitted as soon as
  // that loop is open, each in a scope of its own level.
  int open_output_loops(bool ivdep, int depth = 1, bool all = true,
                        const ReducePlacement* hoist = nullptr) {
    std::vector<int> outs = output_vars();
    if (!all) outs.pop_back();
    if (outs.empty() && !all) return depth;
    auto emit_level = [&](int i) {
      if (!hoist) return;
      scopes.emplace_back();
      for (size_t id = 0; id < k.nodes.size(); ++id)
        if (hoist->level[id] == i) emit(int(id), depth);
    };
    if (outs.empty() && k.batched) {
      line(depth++, "{");
    } else if (outs.empty()) {
      line(depth++, "for (int64_t x_ = start; x_ < end; ++x_) {");
    } else if (k.batched) {
      line(depth++, loop(var_name(k, outs[0]), k.var_size[outs[0]]) + " {");
    } else if (stream_chunk && all && outs.size() == 1) {
      open_stream_loop(outs[0], true, depth);
    } else {
      std::string x0 = var_name(k, outs[0]);
      line(depth++, "for (int64_t " + x0 + " = start; " + x0 + " < end; ++" + x0 + ") {");
    }
    emit_level(0);
    for (size_t i = 1; i < outs.size(); ++i) {
      if (stream_chunk && all && i + 1 == outs.size()) {
        open_stream_loop(outs[i], false, depth);
        emit_level(int(i));
        continue;
      }
      if (i + 1 == outs.size() && ivdep) line(depth, "#pragma GCC ivdep");
      line(depth++, loop(var_name(k, outs[i]), k.var_size[outs[i]]) + " {");
      emit_level(int(i));
    }
    return depth;
  }

  static bool uses_gamma(const LKernel& k) {
    for (const LNode& n : k.nodes)
      if (n.op == Op::Lgamma || n.op == Op::Digamma || n.op == Op::Trigamma || n.op == Op::Zeta)
        return true;
    return k.prologue && uses_gamma(*k.prologue);
  }

  static bool uses_special(const LKernel& k) {
    for (const LNode& n : k.nodes) {
      switch (n.op) {
        case Op::Erfinv: case Op::Ndtri: case Op::Erfcx: case Op::I0: case Op::I0e: case Op::I1:
        case Op::I1e:
        case Op::FrexpMantissa: case Op::FrexpExponent: case Op::Gcd: case Op::NextAfter:
          return true;
        default:
          break;
      }
    }
    return k.prologue && uses_special(*k.prologue);
  }

  // The kernel function; a batched kernel's prologue is a static function called first.
  std::string render(bool entry = true) {
    if (entry) stream_chunk = stream_block();
    if (entry) os << c_libc_decls() << c_prelude() << c_math_prelude();
    if (stream_chunk) os << c_stream_prelude();
    if (entry && uses_gamma(k)) os << c_gamma_prelude();
    if (entry && uses_special(k)) os << c_special_prelude();
    if (entry && k.prologue) {
      Renderer pro(*k.prologue);
      os << pro.render(false);
    }
    os << (entry ? "void kernel" : "static void loom_prologue")
       << "(char** bufs, int64_t start, int64_t end) {\n";
    if (entry && k.prologue)
      line(1, "if (start == 0) loom_prologue(bufs, 0, " +
                  std::to_string(k.prologue->var_size.empty() ? 1 : k.prologue->var_size[0]) + "LL);");
    // NOTE [Restrict]: a parameter in another allocation than the output cannot alias it,
    // and says so, so that the compiler may keep loads (and what they feed: a batch norm's
    // per-channel scale) out of loops that store. Parameters are the same allocation only
    // when they are the same Memory; the output without such a twin is restrict too.
    auto same_mem = [&](size_t p) {
      return !k.params[0] || !k.params[p] || k.params[p] == k.params[0];
    };
    bool out_alone = true;
    for (size_t p = 1; p < k.params.size(); ++p) out_alone &= !same_mem(p);
    for (size_t p = 0; p < k.params.size(); ++p) {
      std::string t = c_storage_type(k.param_dtype[p]);
      const bool restrict = p == 0 ? out_alone && k.params[0] : !same_mem(p);
      line(1, t + "*" + (restrict ? " restrict" : "") + " p" + std::to_string(p) + " = (" + t +
                  "*)bufs[" + std::to_string(p) + "];");
    }
    line(1, "int64_t* fault = (int64_t*)bufs[" + std::to_string(k.params.size()) + "];");
    if (!k.batched && !k.slot_values.empty()) {  // NOTE [Scalar arguments] (launch.cpp)
      line(1, "const int64_t* restrict a = (const int64_t*)bufs[" +
                  std::to_string(k.params.size() + 1) + "];");
      // Each argument is read once, before the loops: gcc does not vectorize a loop that
      // reads one (a layer norm's eps and GELU's constants kept its row loop scalar).
      scopes.emplace_back();
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (k.nodes[i].op == Op::Const && k.nodes[i].slot >= 0) emit(int(i), 1);
    }
    if (k.out_dyn >= 0 && !k.checks.empty() && !k.check_in_reduce) {
      // Every index is checked before anything is written: a fault leaves p0 untouched.
      int depth = open_output_loops(false);
      scopes.emplace_back();
      for (size_t i = 0; i < k.nodes.size(); ++i)
        if (k.nodes[i].op == Op::Check) emit(int(i), depth);
      scopes.pop_back();
      while (depth > 1) line(--depth, "}");
    }
    int depth = 1;
    if (k.batched) {
      line(1, "const int64_t* rows = (const int64_t*)bufs[" + std::to_string(k.params.size() + 1) + "];");
      line(depth++, "for (int64_t b_ = start; b_ < end; ++b_) {");
      line(depth, "const int64_t* a = rows + b_ * " + std::to_string(k.slot_values.size()) + "LL;");
    }
    if (int tile = column_tile()) {
      depth = open_output_loops(false, depth, false);
      render_column_tiles(tile, depth);
      while (depth > 1) line(--depth, "}");
      os << "}\n";
      return os.str();
    }
    const bool plain = !k.batched && k.scan_var < 0 && k.out_dyn < 0;
    ReducePlacement hoist;
    if (plain) hoist = place_reductions(k);
    const size_t outer_scopes = scopes.size();
    if (plain && hoist.ok) plan_row_caches(hoist);
    if (plain && hoist.ok && !k.check_in_reduce) plan_prefetch(hoist);
    depth = open_output_loops(k.scan_var < 0 && k.out_dyn < 0, depth, true,
                              plain && hoist.ok ? &hoist : nullptr);
    scopes.emplace_back();
    for (auto& [id, m] : row_cache)
      scopes.back()[m] = "row" + std::to_string(id) + "[" + var_name(k, output_vars().back()) + "]";
    if (k.out_dyn >= 0) {
      std::string at = "p0[" + emit(k.out_dyn, depth) + "]";
      std::string v = emit(k.root, depth);
      if (k.combine < 0) {
        line(depth, at + " = " + c_store(k.out_dtype, v) + ";");
      } else {
        std::string T = compute_ctype(k.out_dtype);
        line(depth, "{ " + T + " old = " + c_load(k.out_dtype, at) + ";");
        line(depth + 1, c_reduce_step(ReduceKind(k.combine), k.out_dtype, "old", v));
        line(depth + 1, at + " = " + c_store(k.out_dtype, "old") + "; }");
      }
    } else if (k.scan_var >= 0) {
      std::string out = "p0[" + index_str(k, k.out_index) + "]";
      const LNode& s = k.nodes[k.root];
      ReduceKind kind = std::get<ReduceArg>(s.arg).kind;
      std::string acc = "acc";
      line(depth, std::string(compute_ctype(s.dtype)) + " acc = " + c_reduce_init(kind, s.dtype) + ";");
      line(depth++, loop(var_name(k, k.scan_var), k.var_size[k.scan_var]) + " {");
      scopes.emplace_back();
      std::string v = emit(s.src[0], depth);
      line(depth, c_reduce_step(kind, s.dtype, acc, v));
      if (s.dtype == DType::Float16) line(depth, "acc = loom_rh(acc);");
      if (s.dtype == DType::BFloat16) line(depth, "acc = loom_rb(acc);");
      line(depth, out + " = " + c_store(k.out_dtype, acc) + ";");
      scopes.pop_back();
      line(--depth, "}");
    } else if (stream_chunk) {
      close_stream(emit(k.root, depth), depth);
    } else {
      std::string out = "p0[" + slotted(k.out_slot, k.out_index) + "]";
      std::string v = emit(k.root, depth);
      line(depth, out + " = " + c_store(k.out_dtype, v) + ";");
    }
    scopes.resize(outer_scopes);
    while (depth > 1) line(--depth, "}");
    if (stream_chunk) line(1, "loom_sfence();");
    os << "}\n";
    return os.str();
  }
};

}  // namespace

std::string render_c(const LKernel& k) {
  Renderer r(k);
  return r.render();
}

}  // namespace loom
