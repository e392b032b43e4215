// How a rendered kernel walks memory in tiles: column reductions in blocks of outputs,
// scans along an outer axis in blocks of outputs, and transposing copies in square tiles.
// Rows, prefetch and streaming stores are in render_layout.cpp.
#include <algorithm>
#include <cstdint>
#include <string>

#include "codegen/renderer.h"

namespace loom::c_render {

// The coefficient of var `v` in the integer expression `id` where it is linear in `v` (sums,
// differences and constant multiples of coordinates, with any terms that `v` does not
// move), else kNotLinear.
int64_t Renderer::linear_coef(int id, int v) const {
  const LNode& n = k.nodes[id];
  if (!uses_var(id, v)) return 0;
  if (!is_integral(n.dtype) || n.dtype == DType::Bool) return kNotLinear;
  auto side = [&](int i) { return linear_coef(n.src[size_t(i)], v); };
  switch (n.op) {
    case Op::Iota: return coef(n.index, v);
    case Op::Cast: return is_integral(k.nodes[n.src[0]].dtype) ? side(0) : kNotLinear;
    case Op::Add: case Op::Sub: {
      const int64_t a = side(0), b = side(1);
      if (a == kNotLinear || b == kNotLinear) return kNotLinear;
      return n.op == Op::Add ? a + b : a - b;
    }
    case Op::Mul:
      for (int i = 0; i < 2; ++i) {
        const LNode& c = k.nodes[n.src[size_t(1 - i)]];
        if (c.op == Op::Const && c.slot < 0) {
          const int64_t a = side(i);
          return a == kNotLinear ? a : a * std::get<Scalar>(c.arg).i;
        }
      }
      return kNotLinear;
    default: return kNotLinear;
  }
}

// The step in elements of load or gather `id` along var `v` (kNotLinear where it has none).
int64_t Renderer::load_step(int id, int v) const {
  const LNode& n = k.nodes[id];
  return n.op == Op::Load ? coef(n.index, v) : linear_coef(n.src[0], v);
}

bool Renderer::is_read(int id) const {
  return k.nodes[id].op == Op::Load || k.nodes[id].op == Op::Gather;
}

// True when some load below node `id` walks var `v` contiguously (a gather at coordinates
// that move with `v` one element per step counts: a padded window's clamped read).
bool Renderer::loads_contiguous(int id, int v) const {
  return any_below(id, [&](int i) { return is_read(i) && load_step(i, v) == 1; });
}

// NOTE: a reduction over a non-innermost axis (x.sum(0)) would walk memory with a
// stride, one output at a time. Instead the innermost output loop is cut into blocks:
// each block's reductions accumulate a row of outputs per step (the inner loop walks
// contiguous inputs and vectorizes), then the epilogue and store run over the block.
// Returns the tile's size, or 0 when the kernel is not shaped for it.
int Renderer::column_tile() const {
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
    // One that no output loop varies is computed before the loops (NOTE [Whole reductions]).
    if (n.vars.empty() ||
        std::none_of(outs.begin(), outs.end(), [&](int v) { return uses_var(int(i), v); }))
      return 0;
    const bool arg = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin;
    // An arg reduction's block keeps two accumulators per column in memory, which a short
    // reduction does not repay: argmax over dim 1 of (100, 3, 50000) took 1.6 ms one output
    // at a time and 2.2 in blocks, over (256, 64, 256) 2.4 ms and 0.13.
    if (arg) {
      int64_t count = 1;
      for (int v : n.vars) count *= k.var_size[v];
      if (count < 16) return 0;
    }
    // A reduction below this one (a variance's mean) is computed first for the block, so
    // it must not vary along this one's loops.
    for (size_t j = 0; j < i; ++j)
      if (k.nodes[j].op == Op::Reduce && loads_below(int(i), int(j)))
        for (int v : n.vars)
          if (uses_var(int(j), v)) return 0;
    if (!loads_contiguous(n.src[0], xi)) return 0;
    // Column-shaped: some load walks the outputs contiguously and the reduced axis with a
    // stride (or not at all), and none walks the reduced axis contiguously while varying
    // with the outputs. Loads of the reduced axis alone (layer norm's per-row statistics
    // under its weight's gradient) are the same for a whole block.
    const int r = n.vars.back();
    const bool strided = any_below(n.src[0], [&](int j) {
      return is_read(j) && load_step(j, xi) == 1 && load_step(j, r) != 1;
    });
    const bool rowwise = any_below(n.src[0], [&](int j) {
      return is_read(j) && load_step(j, r) == 1 && load_step(j, xi) != 0;
    });
    column |= strided && !rowwise;
    tile = std::max(tile, 4 * kLaneBytes / std::max(4, itemsize(n.dtype)));
    acc_bytes += arg ? 16 : std::max(4, itemsize(n.dtype));  // an arg's extreme and index
  }
  if (!column || k.var_size[xi] < 8) return 0;
  // The accumulators of a block fill kColumnBytes of L1: each step then reads a long
  // contiguous piece of its row. Blocks of 128 floats read 512 bytes per row, a new
  // page each time for rows of 16 KB (x.sum(0) over 4096x4096: 9 -> 4 ms).
  // No larger than the output row (rounded up to whole lanes): a pooling window's channels.
  const int64_t row = (k.var_size[xi] + tile - 1) / tile * tile;
  return int(std::min<int64_t>(row, std::max(tile, int(kColumnBytes / acc_bytes) / tile * tile)));
}

bool Renderer::loads_below(int id, int target) const {
  return any_below(k.nodes[id].src[0], [&](int i) { return i == target; });
}

// The tiled kernel body (see column_tile) inside the outer output loops at `depth`.
void Renderer::render_column_tiles(int tile, int depth) {
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
      const bool arg = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin;
      const ArgAcc g = arg ? arg_acc(n) : ArgAcc{};
      const std::string acc = "acc" + std::to_string(i), best = "idx" + std::to_string(i);
      const std::string init = arg ? g.init : c_reduce_init(kind, n.dtype);
      const std::string ctype = arg ? g.T : compute_ctype(n.dtype);
      line(depth, ctype + " " + acc + "[" + T + "];");
      line(depth, "for (int64_t j_ = 0; j_ < " + T + "; ++j_) " + acc + "[j_] = " + init + ";");
      if (arg) {  // each column's running extreme and its position (NOTE [Float arg reductions])
        line(depth, g.index_t + " " + best + "[" + T + "];");
        line(depth, "for (int64_t j_ = 0; j_ < " + T + "; ++j_) " + best + "[j_] = 0;");
      }
      // NOTE [Blocked sums] (render_reduce.cpp): each column's sum restarts every kSumBlock
      // steps of the innermost reduced loop, and at its end, into a running sum.
      const int64_t inner = n.vars.empty() ? 1 : k.var_size[n.vars.back()];
      const bool blocked = kind == ReduceKind::Sum && is_floating(n.dtype) && inner >= 16 &&
                           (inner > kSumBlock || n.vars.size() > 1);
      const std::string bacc = "bacc" + std::to_string(i);
      if (blocked) {
        line(depth, ctype + " " + bacc + "[" + T + "];");
        line(depth, "for (int64_t j_ = 0; j_ < " + T + "; ++j_) " + bacc + "[j_] = " + init + ";");
      }
      int d = depth;
      for (size_t vi = 0; vi < n.vars.size(); ++vi) {
        const int v = n.vars[vi];
        if (blocked && vi + 1 == n.vars.size() && inner > kSumBlock) {
          const std::string r = var_name(k, v), rc = r + "c", I = std::to_string(inner) + "LL",
                            B = std::to_string(kSumBlock) + "LL";
          line(d++, "for (int64_t " + rc + " = 0; " + rc + " < " + I + "; " + rc + " += " + B + ") {");
          line(d++, "for (int64_t " + r + " = " + rc + "; " + r + " < (" + rc + " + " + B + " < " + I +
                        " ? " + rc + " + " + B + " : " + I + "); ++" + r + ") {");
          continue;
        }
        line(d++, loop(var_name(k, v), k.var_size[v]) + " {");
      }
      const int fold_depth = d - 1;  // inside the innermost reduced loop's block
      line(d, "#pragma omp simd");
      line(d++, "for (int64_t j_ = 0; j_ < " + nb + "; ++j_) {");
      line(d, "const int64_t " + x + " = " + xb + " + j_;");
      scopes.emplace_back();
      for (auto& [id, name] : accs) scopes.back()[id] = name;  // the block's earlier results
      ++in_lanes;
      std::string v = emit(n.src[0], d);
      --in_lanes;
      scopes.pop_back();
      if (arg)
        line(d, arg_step(g, acc + "[j_]", best + "[j_]", arg_position(n, g), v));
      else
        line(d, acc + "[j_] = " + c_reduce_combine(kind, n.dtype, acc + "[j_]", v) + ";");
      if (blocked) {
        while (d > fold_depth) line(--d, "}");
        line(d, "for (int64_t j_ = 0; j_ < " + nb + "; ++j_) { " + bacc + "[j_] = " +
                    c_reduce_combine(kind, n.dtype, bacc + "[j_]", acc + "[j_]") + "; " + acc +
                    "[j_] = " + init + "; }");
      }
      while (d > depth) line(--d, "}");
      if (blocked)
        line(depth, "for (int64_t j_ = 0; j_ < " + nb + "; ++j_) " + acc + "[j_] = " + bacc + "[j_];");
      accs.emplace_back(int(i), !arg ? acc + "[j_]"
                                : g.narrow ? "((int64_t)" + best + "[j_])" : best + "[j_]");
    }
    line(depth, k.checks.empty() ? "#pragma omp simd" : "LOOM_IVDEP");
    line(depth++, "for (int64_t j_ = 0; j_ < " + nb + "; ++j_) {");
    line(depth, "const int64_t " + x + " = " + xb + " + j_;");
    scopes.emplace_back();
    for (auto& [id, name] : accs) scopes.back()[id] = name;
    std::string v = emit(k.root, depth);
    line(depth, "p0[" + index_str(k, k.out_index) + "] = " + c_store(k.out_dtype, v) + ";");
    store_extras(depth);  // outputs beside it (cohorts, siblings)
    scopes.pop_back();
    line(--depth, "}");
    scopes.pop_back();
  };
  line(depth++,
       "for (int64_t " + xb + " = " + lo + "; " + xb + " < " + hi + "; " + xb + " += " + T + ") {");
  // Whole blocks have a constant trip count, which keeps the accumulators in registers.
  const bool whole = !split && k.var_size[xi] % tile == 0, part = split || !whole;
  if (part && k.var_size[xi] >= tile) line(depth++, "if (" + hi + " - " + xb + " >= " + T + ") {");
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

// NOTE [Scan tiles]: a scan along an axis other than the innermost (x.cumsum(0)) walked
// each output down the scanned axis with a stride, one output at a time, a cache line per
// element: cumsum(0) of 1024x1024 float32 took 6.1 ms where cumsum(1) took 0.33 (eager
// 12.6 and 0.81). Instead the innermost output loop is cut into blocks whose accumulators
// advance together, one row of the block per step of the scan: the inner loop walks
// contiguous memory and vectorizes, and each output still takes its elements in order, so
// the values are the same. Returns the block's size, or 0 when the kernel is not shaped for
// it (its scanned value holds no reduction). Rows of a logcumsumexp along the innermost
// axis advance in blocks the same way (below).
int Renderer::scan_tile() const {
  if (k.scan_var < 0 || k.batched || k.check_in_reduce || !k.checks.empty()) return 0;
  std::vector<int> outs = output_vars();
  if (outs.empty()) return 0;
  const int xi = outs.back();
  const LNode& s = k.nodes[k.root];
  if (any_below(s.src[0], [&](int j) { return k.nodes[j].op == Op::Reduce; })) return 0;
  if (coef(k.out_index, xi) == 1 && coef(k.out_index, k.scan_var) != 1 && k.var_size[xi] >= 8)
    return int(kColumnBytes / std::max(4, itemsize(s.dtype)));
  // Along the innermost axis each output's scan is a chain of dependent steps; where a
  // step is long (logcumsumexp's exp and log1p), a few rows advance together instead, their
  // chains independent: logcumsumexp(1) of 1024x1024 float32 14.3 -> 5.3 ms (eager 26-28).
  // A sum's or product's step is short, and the rows' strided loads cost more than the
  // overlap gains (cumsum(1) 0.34 -> 0.51 ms that way).
  if (coef(k.out_index, k.scan_var) == 1 && k.var_size[xi] >= kScanRows &&
      k.var_size[k.scan_var] >= 8 && std::get<ReduceArg>(s.arg).kind == ReduceKind::LogSumExp)
    return int(kScanRows);
  return 0;
}

// The tiled scan (see scan_tile) inside the outer output loops at `depth`.
void Renderer::render_scan_tiles(int tile, int depth) {
  std::vector<int> outs = output_vars();
  const int xi = outs.back();
  const std::string x = var_name(k, xi), xb = x + "b", xe = x + "e", T = std::to_string(tile) + "LL";
  const bool split = outs.size() == 1;  // the thread range is this loop's
  const std::string lo = split ? "start" : "0";
  const std::string hi = split ? "end" : std::to_string(k.var_size[xi]) + "LL";
  const LNode& s = k.nodes[k.root];
  const ReduceKind kind = std::get<ReduceArg>(s.arg).kind;
  const std::string acc = "acc[" + x + " - " + xb + "]";
  const DType t = k.nodes[s.src[0]].dtype;  // the accumulator's (NOTE [Scan accumulators])
  line(depth++,
       "for (int64_t " + xb + " = " + lo + "; " + xb + " < " + hi + "; " + xb + " += " + T + ") {");
  line(depth, "const int64_t " + xe + " = " + hi + " - " + xb + " < " + T + " ? " + hi + " : " +
                  xb + " + " + T + ";");
  line(depth, std::string(compute_ctype(t)) + " acc[" + T + "];");
  line(depth, "for (int64_t j_ = 0; j_ < " + T + "; ++j_) acc[j_] = " + c_reduce_init(kind, t) + ";");
  line(depth++, loop(var_name(k, k.scan_var), k.var_size[k.scan_var]) + " {");
  line(depth, "LOOM_IVDEP");
  line(depth++, "for (int64_t " + x + " = " + xb + "; " + x + " < " + xe + "; ++" + x + ") {");
  scopes.emplace_back();
  std::string v = emit(s.src[0], depth);
  line(depth, c_reduce_step(kind, t, acc, v));
  if (t == DType::Float16) line(depth, acc + " = loom_rh(" + acc + ");");
  if (t == DType::BFloat16) line(depth, acc + " = loom_rb(" + acc + ");");
  line(depth, "p0[" + index_str(k, k.out_index) + "] = " + c_store(k.out_dtype, acc) + ";");
  scopes.pop_back();
  for (int i = 0; i < 3; ++i) line(--depth, "}");
}

// One output's scan, inside the output loops at `depth`: the accumulator (of the scanned
// value's dtype, NOTE [Scan accumulators]) advances one step at a time and each step's
// value is stored rounded once to the output's dtype.
void Renderer::render_scan(int depth) {
  const LNode& s = k.nodes[k.root];
  const ReduceKind kind = std::get<ReduceArg>(s.arg).kind;
  const DType t = k.nodes[s.src[0]].dtype;
  line(depth, std::string(compute_ctype(t)) + " acc = " + c_reduce_init(kind, t) + ";");
  line(depth++, loop(var_name(k, k.scan_var), k.var_size[k.scan_var]) + " {");
  scopes.emplace_back();
  std::string v = emit(s.src[0], depth);
  line(depth, c_reduce_step(kind, t, "acc", v));
  if (t == DType::Float16) line(depth, "acc = loom_rh(acc);");
  if (t == DType::BFloat16) line(depth, "acc = loom_rb(acc);");
  line(depth, "p0[" + index_str(k, k.out_index) + "] = " + c_store(k.out_dtype, "acc") + ";");
  scopes.pop_back();
  line(--depth, "}");
}

// NOTE [Transpose tiles]: a store whose innermost loop writes contiguously while a load
// walks that loop with a stride of a line or more, and walks the loop outside it
// contiguously (a transposing copy), reads a new line for every element. When the lines
// of one inner loop do not stay in L1 until the next outer index reads them again (512
// lines or more), each is read from farther away once per element. Such a kernel walks
// the two loops in square tiles: within a tile the load's lines are read once and then
// from L1. Elementwise kernels only (no reductions, checks or extra outputs); preferred
// to streaming stores. 1024x512 .t().contiguous(): 0.61 -> 0.31 ms. Returns the tile's
// side, or 0.
int Renderer::transpose_tile() const {
  if (k.batched || k.scan_var >= 0 || k.out_dyn >= 0 || !k.extra.empty() || !k.checks.empty())
    return 0;
  std::vector<int> outs = output_vars();
  if (outs.size() < 2) return 0;
  const int xi = outs.back(), xo = outs[outs.size() - 2];
  constexpr int kTile = 32, kMinLines = 512;
  if (k.var_size[xi] < kMinLines || k.var_size[xo] < kTile / 2) return 0;
  if (coef(k.out_index, xi) != 1) return 0;
  bool strided = false;
  for (const LNode& n : k.nodes) {
    if (n.op == Op::Reduce || n.op == Op::Check || n.op == Op::Gather) return 0;
    if (n.op != Op::Load) continue;
    const int64_t step = std::abs(coef(n.index, xi)) * itemsize(n.dtype);
    strided |= step >= 64 && coef(n.index, xo) == 1;
  }
  return strided ? kTile : 0;
}

// The output loops of a transposing store (see transpose_tile): the outer loops as usual,
// then the last two in tiles of side `tile`; returns the body's depth.
int Renderer::open_transpose_tiles(int tile, int depth) {
  std::vector<int> outs = output_vars();
  const int xi = outs.back(), xo = outs[outs.size() - 2];
  const bool split = outs.size() == 2;  // the thread range is the outer tiled loop's
  for (size_t i = 0; i + 2 < outs.size(); ++i) {
    const std::string x = var_name(k, outs[i]);
    if (i == 0)
      line(depth++, "for (int64_t " + x + " = start; " + x + " < end; ++" + x + ") {");
    else
      line(depth++, loop(x, k.var_size[outs[i]]) + " {");
  }
  const std::string T = std::to_string(tile) + "LL";
  auto tiles = [&](int v, const std::string& lo, const std::string& hi) {
    const std::string x = var_name(k, v), xb = x + "b", xe = x + "e";
    line(depth++, "for (int64_t " + xb + " = " + lo + "; " + xb + " < " + hi + "; " + xb +
                      " += " + T + ") {");
    line(depth, "const int64_t " + xe + " = " + hi + " - " + xb + " < " + T + " ? " + hi +
                    " : " + xb + " + " + T + ";");
  };
  const std::string no = std::to_string(k.var_size[xo]) + "LL";
  tiles(xo, split ? "start" : "0", split ? "end" : no);
  tiles(xi, "0", std::to_string(k.var_size[xi]) + "LL");
  const std::string o = var_name(k, xo), i = var_name(k, xi);
  line(depth++, "for (int64_t " + o + " = " + o + "b; " + o + " < " + o + "e; ++" + o + ") {");
  line(depth, "LOOM_IVDEP");
  line(depth++, "for (int64_t " + i + " = " + i + "b; " + i + " < " + i + "e; ++" + i + ") {");
  return depth;
}

}  // namespace loom::c_render
