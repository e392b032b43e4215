// Pass 3, a reduction's C source: its accumulators (one per member of a joint group),
// vector lanes, blocked sums and the loops over its reduced dims; which reductions run
// jointly and which are nested. The rest of a kernel's source is in render_c.cpp.
#include <algorithm>
#include <functional>

#include "codegen/renderer.h"

namespace loom {

namespace c_render {

// NOTE: a float Sum/Prod/Max/Min over a long innermost loop runs as kLaneBytes of
// independent partial accumulators (lane l takes every element l mod lanes) folded
// pairwise at the end: gcc vectorizes that without reassociating anything
// (-ffast-math stays off). Max/Min keep NaN sticky in every lane and in the fold.
int Renderer::reduce_lanes(const LNode& n, ReduceKind kind, DType acc_t) const {
  if (n.vars.empty() || !is_floating(acc_t) || in_lanes) return 0;
  if (kind != ReduceKind::Sum && kind != ReduceKind::Prod && kind != ReduceKind::Max &&
      kind != ReduceKind::Min)
    return 0;
  int lanes = kLaneBytes / (acc_t == DType::Float64 ? 8 : 4);
  // Shorter rows (a distance over 32 columns) take fewer lanes, twice around the lane loop
  // at least: scalar, each of their elements was an iteration of its own.
  const int64_t len = k.var_size[n.vars.back()];
  while (lanes > 8 && len < 2 * lanes) lanes /= 2;
  return len >= 2 * lanes ? lanes : 0;
}

DType Renderer::reduce_acc_type(const LNode& n) const {
  const ReduceKind kind = std::get<ReduceArg>(n.arg).kind;
  const bool arg = kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin;
  return arg ? k.nodes[n.src[0]].dtype : n.dtype;
}

// NOTE [Invariant terms]: arithmetic in a reduction's summand that none of its loops moves
// (a pair's row numbers from a square root in pdist, a window's start in a pooling) was
// computed in every iteration, in every vector lane: it is emitted once, before the loops.
// Only for reductions run as lanes: a scalar loop's invariants the compiler moves itself,
// and moving them by hand changed how clang vectorized the output loop around 3-d pooling
// windows (their values and indices 1.53 -> 1.80 ms).
// Only arithmetic on constants and coordinates moves; loads, gathers and checks stay where
// they are (a loop that runs no iteration must not read or fault).
void Renderer::hoist_invariant_terms(const std::vector<int>& group, int depth) {
  std::vector<int> vars;
  for (int m : group) vars.insert(vars.end(), k.nodes[m].vars.begin(), k.nodes[m].vars.end());
  std::vector<int8_t> fixed(k.nodes.size(), -1);  // pure arithmetic that no var of `vars` moves
  std::function<bool(int)> is_fixed = [&](int id) {
    if (fixed[size_t(id)] >= 0) return fixed[size_t(id)] == 1;
    const LNode& n = k.nodes[size_t(id)];
    const OpKind kind = op_kind(n.op);
    bool ok = n.op == Op::Const || n.op == Op::Iota ||
              (n.op != Op::Check && (kind == OpKind::Unary || kind == OpKind::Binary ||
                                     kind == OpKind::Ternary));
    for (int v : vars) ok = ok && coef(n.index, v) == 0;
    for (int src : n.src) ok = ok && is_fixed(src);
    fixed[size_t(id)] = ok ? 1 : 0;
    return ok;
  };
  std::vector<int> stack;
  for (int m : group) stack.push_back(k.nodes[m].src[0]);
  std::vector<bool> seen(k.nodes.size());
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (seen[size_t(id)]) continue;
    seen[size_t(id)] = true;
    const LNode& n = k.nodes[size_t(id)];
    if (n.op == Op::Reduce || n.op == Op::Scan || find(id)) continue;
    if (is_fixed(id)) {
      if (n.op != Op::Const && n.op != Op::Iota) emit(id, depth);
      continue;
    }
    for (int src : n.src) stack.push_back(src);
  }
}

// NOTE [Float arg reductions]: a float argmax/argmin compares integer keys that order as
// the values do (-0.0 as 0.0), NaN above (argmax) or below (argmin) every number, so that
// the first NaN, else the first extreme, wins with one strict comparison. Written on the
// floats (`v > acc || v != v && acc == acc`), gcc kept a branch, which a pooling window
// mispredicts about half the time (20x slower). A float32 one keeps its index in 32 bits
// beside its 32-bit key where the reduced count allows, so that a loop of them vectorizes
// in lanes of one width.
Renderer::ArgAcc Renderer::arg_acc(const LNode& n) const {
  ArgAcc a;
  a.kind = std::get<ReduceArg>(n.arg).kind;
  a.mx = a.kind != ReduceKind::ArgMin;
  const DType vt = k.nodes[n.src[0]].dtype, acc_t = reduce_acc_type(n);
  a.keyed = is_floating(vt);
  a.wide = a.keyed && vt == DType::Float64;
  a.T = compute_ctype(acc_t);
  a.init = c_reduce_init(a.kind, acc_t);
  if (a.keyed) {
    a.T = a.wide ? "int64_t" : "int32_t";
    a.init = std::string(a.wide ? "INT64" : "INT32") + (a.mx ? "_MIN" : "_MAX");
  }
  int64_t count = 1;
  for (int v : n.vars) count *= k.var_size[v];
  a.narrow = a.keyed && !a.wide && count < (int64_t(1) << 31);
  a.index_t = a.narrow ? "int32_t" : "int64_t";
  return a;
}

std::string Renderer::arg_position(const LNode& n, const ArgAcc& a) const {
  std::string lin = "0";
  for (int v : n.vars)
    lin = "(" + lin + ") * " + std::to_string(k.var_size[v]) +
          (a.narrow ? " + (int32_t)" : "LL + ") + var_name(k, v);
  return lin;
}

std::string Renderer::arg_step(const ArgAcc& a, const std::string& acc, const std::string& best,
                               const std::string& lin, const std::string& v) {
  if (a.keyed) {
    const std::string nan_key = std::string(a.wide ? "INT64" : "INT32") + (a.mx ? "_MAX" : "_MIN");
    return "{ const " + a.T + " k_ = " + v + " != " + v + " ? " + nan_key + " : " +
           (a.wide ? "loom_dkey(" : "loom_fkey(") + v + "); const int t_ = (k_" +
           (a.mx ? " > " : " < ") + acc + "); " + acc + " = t_ ? k_ : " + acc + "; " + best +
           " = t_ ? " + lin + " : " + best + "; }";
  }
  // The first NaN, else the first extreme. Computed without a branch (NOTE [NaN-sticky
  // max]): a branch on data is mispredicted about half the time in a pooling window.
  const char* cmp = a.mx ? " > " : " < ";
  return "{ const int t_ = (" + v + cmp + acc + ") | ((" + v + " != " + v + ") & (" + acc +
         " == " + acc + ")); " + acc + " = t_ ? " + v + " : " + acc + "; " + best + " = t_ ? " +
         lin + " : " + best + "; }";
}

std::string Renderer::emit_reduce(int id, int depth) {
  const LNode& first = k.nodes[id];
  std::vector<int> group{id};
  for (int p : partners(id)) group.push_back(p);
  // A reduction nested in this one's summand must not take a partner of this group too:
  // it would declare the partner's accumulator again, in the scope this group adds to.
  joined.insert(group.begin(), group.end());
  // One accumulator per member of the group.
  struct Acc {
    int id;
    ReduceKind kind;
    bool arg;
    ArgAcc g;  // an arg reduction's
    DType vt, acc_t;
    std::string T, init, acc, best, lacc, lin;
    std::string block;  // the running sum of a blocked sum (NOTE [Blocked sums]), or ""
  };
  std::vector<Acc> accs;
  const int lanes = reduce_lanes(first, std::get<ReduceArg>(first.arg).kind, reduce_acc_type(first));
  const std::string l = "l" + std::to_string(id), L = std::to_string(lanes) + "LL";
  auto cached = row_cache.find(id);
  const std::string row = "row" + std::to_string(id);
  // NOTE [Blocked sums]: a float sum accumulated in order adds each element to a running
  // total that grows past it, rounding every step; over millions of elements (a lane of a
  // long row, a channel's statistics over a batch) the errors pile up where the CPU's
  // cascade sum keeps them near one rounding: 2M floats of 1.0001 summed 88 off (4e-5),
  // the per-channel sums of 32x64x32x32 0.32 off 32771. Each accumulator (each lane's)
  // now takes at most kSumBlock elements, and one row of the innermost reduced dim at
  // most, before it is added into a running sum of the same type and restarted: the
  // rounding then grows with the count of blocks, not of elements. Rows of one reduced
  // dim that fit one block (a softmax's, a layer norm's) are summed as before.
  const int64_t inner = first.vars.empty() ? 1 : k.var_size[first.vars.back()];
  const int64_t block = lanes ? kSumBlock * lanes : kSumBlock;
  const bool blocked = !first.vars.empty() && inner >= 16 &&
                       (inner > block || first.vars.size() > 1);
  for (int m : group) {
    const LNode& n = k.nodes[m];
    Acc a;
    a.id = m;
    a.kind = std::get<ReduceArg>(n.arg).kind;
    a.arg = a.kind == ReduceKind::ArgMax || a.kind == ReduceKind::ArgMin;
    a.vt = k.nodes[n.src[0]].dtype;
    a.acc_t = reduce_acc_type(n);
    a.T = compute_ctype(a.acc_t);
    a.init = c_reduce_init(a.kind, a.acc_t);
    a.acc = "acc" + std::to_string(m);
    a.best = "idx" + std::to_string(m);
    a.lacc = "lacc" + std::to_string(m);
    if (a.arg) {
      a.g = arg_acc(n);
      a.T = a.g.T;
      a.init = a.g.init;
      a.lin = arg_position(n, a.g);
    }
    line(depth, a.T + " " + a.acc + " = " + a.init + ";");
    if (a.arg) line(depth, a.g.index_t + " " + a.best + " = 0;");
    if (lanes) {
      line(depth, a.T + " " + a.lacc + "[" + L + "];");
      line(depth, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") " + a.lacc +
                      "[" + l + "] = " + a.init + ";");
    }
    if (blocked && a.kind == ReduceKind::Sum && is_floating(a.acc_t)) {
      a.block = "bacc" + std::to_string(m);
      if (lanes) {
        line(depth, a.T + " " + a.block + "[" + L + "];");
        line(depth, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") " + a.block +
                        "[" + l + "] = " + a.init + ";");
      } else {
        line(depth, a.T + " " + a.block + " = " + a.init + ";");
      }
    }
    accs.push_back(std::move(a));
  }
  // Adds the blocked sums' accumulators into their running sums and restarts them.
  auto fold = [&](int at) {
    for (const Acc& a : accs) {
      if (a.block.empty()) continue;
      if (lanes)
        line(at, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") { " + a.block +
                     "[" + l + "] = " +
                     c_reduce_combine(a.kind, a.acc_t, a.block + "[" + l + "]", a.lacc + "[" + l + "]") +
                     "; " + a.lacc + "[" + l + "] = " + a.init + "; }");
      else
        line(at, a.block + " = " + c_reduce_combine(a.kind, a.acc_t, a.block, a.acc) + "; " + a.acc +
                     " = " + a.init + ";");
    }
  };
  if (cached != row_cache.end() && pipeline)  // NOTE [Row pipelining]
    line(depth, row_cache_ctype(id) + "* " + row + " = rowbuf" + std::to_string(id) + "[(" +
                    var_name(k, output_vars()[0]) + " - start) & 1];");
  else if (cached != row_cache.end())
    line(depth, std::string(compute_ctype(accs[0].vt)) + " " + row + "[" +
                    std::to_string(k.var_size[first.vars[0]]) + "LL];");
  if (lanes) hoist_invariant_terms(group, depth);
  int d = depth;
  const bool any_block =
      std::any_of(accs.begin(), accs.end(), [](const Acc& a) { return !a.block.empty(); });
  // The innermost loop of a scalar reduction, in blocks when they are needed.
  const bool scalar_blocks = any_block && !lanes && inner > block;
  for (size_t i = 0; i < first.vars.size(); ++i) {
    int v = first.vars[i];
    if (lanes && i + 1 == first.vars.size()) continue;
    if (scalar_blocks && i + 1 == first.vars.size()) {
      const std::string x = var_name(k, v), xc = x + "c";
      line(d++, "for (int64_t " + xc + " = 0; " + xc + " < " + std::to_string(inner) + "LL; " + xc +
                    " += " + std::to_string(block) + "LL) {");
      line(d++, "for (int64_t " + x + " = " + xc + "; " + x + " < (" + xc + " + " +
                    std::to_string(block) + "LL < " + std::to_string(inner) + "LL ? " + xc + " + " +
                    std::to_string(block) + "LL : " + std::to_string(inner) + "LL); ++" + x + ") {");
      continue;
    }
    line(d++, loop(var_name(k, v), k.var_size[v]) + " {");
  }
  auto body = [&](int at) {
    scopes.emplace_back();
    // The partners' loop variables are the first's.
    for (size_t g = 1; g < group.size(); ++g)
      for (size_t i = 0; i < first.vars.size(); ++i)
        line(at, "const int64_t " + var_name(k, k.nodes[group[g]].vars[i]) + " = " +
                     var_name(k, first.vars[i]) + ";");
    for (const Acc& a : accs) {
      const int summand = k.nodes[a.id].src[0];
      const bool row_cached = a.id == id && cached != row_cache.end();
      std::string v = emit(summand, at);
      if (row_cached) line(at, row + "[" + var_name(k, first.vars[0]) + "] = " + v + ";");
      if (a.arg) {
        line(at, arg_step(a.g, a.acc, a.best, a.lin, v));
      } else if (lanes) {
        std::string s = a.lacc + "[" + l + "]";
        line(at, s + " = " + c_reduce_combine(a.kind, a.acc_t, s, v) + ";");
      } else {
        line(at, c_reduce_step(a.kind, a.acc_t, a.acc, v));
      }
    }
    scopes.pop_back();
  };
  if (lanes) {
    // Whole blocks of `lanes` elements, then the remainder in lanes 0.. of the last block.
    const std::string r = var_name(k, first.vars.back()), ro = r + "o", rc = r + "c";
    const int64_t size = k.var_size[first.vars.back()], main = size / lanes * lanes;
    const bool chunked = any_block && main > block;
    if (chunked) {
      const std::string M = std::to_string(main) + "LL", B = std::to_string(block) + "LL";
      line(d++, "for (int64_t " + rc + " = 0; " + rc + " < " + M + "; " + rc + " += " + B + ") {");
      line(d++, "for (int64_t " + ro + " = " + rc + "; " + ro + " < (" + rc + " + " + B + " < " + M +
                    " ? " + rc + " + " + B + " : " + M + "); " + ro + " += " + L + ") {");
    } else {
      line(d++, "for (int64_t " + ro + " = 0; " + ro + " < " + std::to_string(main) + "LL; " + ro +
                    " += " + L + ") {");
    }
    if (id == prefetch_host) emit_prefetches(ro, lanes, d);
    // `omp simd` (-fopenmp-simd) keeps the lane loop whole until it is vectorized, and
    // the accumulators in registers; it allows no `return`, which a Check needs.
    // NOTE [Lane loops]: at the lanes' own vector width.
    line(d, k.check_in_reduce ? "#pragma GCC unroll 1"
                              : "LOOM_LANES(" + std::to_string(lanes) + ")");
    line(d++, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") {");
    line(d, "const int64_t " + r + " = " + ro + " + " + l + ";");
    ++in_lanes;
    body(d);
    --in_lanes;
    line(--d, "}");
    if (pipeline && id == prefetch_host) emit_pipelined_block(ro, lanes, d);
    line(--d, "}");
    if (chunked) {
      fold(d);
      line(--d, "}");
    }
    if (size > main) {
      line(d++, "for (int64_t " + l + " = 0; " + l + " < " + std::to_string(size - main) +
                    "LL; ++" + l + ") {");
      line(d, "const int64_t " + r + " = " + std::to_string(main) + "LL + " + l + ";");
      body(d);
      line(--d, "}");
    }
    if (any_block && (size > main || !chunked)) fold(d);  // the end of a row
  } else {
    if (first.vars.empty()) line(d++, "{");  // loops of size 1 were dropped: a block still
    body(d);                                 // keeps the body's names to itself
    if (any_block) {
      line(--d, "}");  // the innermost loop (or its block)
      fold(d);
      if (scalar_blocks) line(--d, "}");
    }
  }
  while (d > depth) line(--d, "}");
  // The running sums hold every block now (each row ended with a fold).
  for (Acc& a : accs) {
    if (a.block.empty()) continue;
    if (lanes)
      line(depth, "for (int64_t " + l + " = 0; " + l + " < " + L + "; ++" + l + ") " + a.lacc +
                      "[" + l + "] = " + a.block + "[" + l + "];");
    else
      line(depth, a.acc + " = " + a.block + ";");
  }
  for (const Acc& a : accs) {
    if (lanes) {
      for (int h = lanes / 2; h > 0; h /= 2) {
        std::string hs = std::to_string(h) + "LL";
        line(depth, "for (int64_t " + l + " = 0; " + l + " < " + hs + "; ++" + l + ") " + a.lacc +
                        "[" + l + "] = " +
                        c_reduce_combine(a.kind, a.acc_t, a.lacc + "[" + l + "]",
                                         a.lacc + "[" + l + " + " + hs + "]") +
                        ";");
      }
      line(depth, a.acc + " = " + a.lacc + "[0];");
    }
    scopes.back()[a.id] = !a.arg ? a.acc : a.g.narrow ? "((int64_t)" + a.best + ")" : a.best;
  }
  return scopes.back()[id];
}

// NOTE [Joint reductions]: reductions of a kernel over loops of the same sizes that
// neither reads the other (max pooling's value and index, the two sums of a norm's
// backward) run in one loop nest: the partners' loop variables alias the first's, and each
// element their summands share is loaded once. Each keeps its own accumulator and order,
// so results are those of separate loops. Partners must be computed at the same place: not
// inside another reduction, at the same hoisting level, without row caches of their own.
std::vector<int> Renderer::partners(int id) {
  std::vector<int> out;
  const LNode& n = k.nodes[id];
  if (in_lanes || row_cache.count(id) || nested_reduce(id)) return out;
  const ReduceKind kind = std::get<ReduceArg>(n.arg).kind;
  const int lanes = reduce_lanes(n, kind, reduce_acc_type(n));
  auto same_loops = [&](const LNode& p) {
    if (p.vars.size() != n.vars.size()) return false;
    for (size_t i = 0; i < n.vars.size(); ++i)
      if (k.var_size[p.vars[i]] != k.var_size[n.vars[i]]) return false;
    return true;
  };
  for (size_t j = 0; j < k.nodes.size(); ++j) {
    const LNode& p = k.nodes[j];
    if (int(j) == id || p.op != Op::Reduce || find(int(j)) || joined.count(int(j)) ||
        row_cache.count(int(j)) ||
        int(j) == prefetch_host || !same_loops(p))
      continue;
    if (placement && placement->level[j] != placement->level[id]) continue;
    if (reduce_lanes(p, std::get<ReduceArg>(p.arg).kind, reduce_acc_type(p)) != lanes) continue;
    if (nested_reduce(int(j)) || reaches(int(j), id) || reaches(id, int(j))) continue;
    bool apart = true;
    for (int q : out) apart &= !reaches(int(j), q) && !reaches(q, int(j));
    if (apart) out.push_back(int(j));
    if (lanes && out.size() + 1 >= size_t(kMaxLanedGroup)) break;
  }
  return out;
}

// Whether node `from` reads node `to`, directly or through other nodes.
bool Renderer::reaches(int from, int to) const {
  return from > to && any_below(from, [&](int i) { return i == to; });  // sources come first
}

// Whether reduction `id` runs inside another reduction's loop: its summand depends on
// reduction variables other than its own.
bool Renderer::nested_reduce(int id) const {
  const LNode& n = k.nodes[id];
  return any_below(n.src[0], [&](int i) {
    const Affine& a = k.nodes[i].index;
    for (size_t v = 0; v < a.coef.size(); ++v)
      if (a.coef[v] && !k.is_output_var[v] &&
          std::find(n.vars.begin(), n.vars.end(), int(v)) == n.vars.end())
        return true;
    return false;
  });
}

}  // namespace c_render

}  // namespace loom
