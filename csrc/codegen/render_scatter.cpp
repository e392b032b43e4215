// A scatter's loops: its index checks, in a pass before anything is written, and its
// store or combine at a computed index.
#include <algorithm>
#include <string>
#include <vector>

#include "codegen/renderer.h"

namespace loom {

namespace {

// A scatter index as a * x + [lo, hi]: `a` times the outermost output var, plus a value
// within [lo, hi] for every value of the other vars and every input. Sizes bound the
// terms, so the sums stay within int64; a product that would not is not taken. A side
// may be unbounded (a coordinate computed in floating point and cast), until a clamp
// bounds it again (interpolation's taps, pooling's windows).
struct IndexRange {
  int64_t a = 0, lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;  // unbounded below, above
  bool constant() const { return a == 0 && !lo_open && !hi_open && lo == hi; }
  bool fixed() const { return a == 0; }  // independent of the outer var
};

IndexRange unbounded() { return {0, 0, 0, true, true}; }

bool index_range(const LKernel& k, int id, int outer, IndexRange& r) {
  const LNode& n = k.nodes[size_t(id)];
  IndexRange x, y;
  auto both = [&] {
    return index_range(k, n.src[0], outer, x) && index_range(k, n.src[1], outer, y);
  };
  switch (n.op) {
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge:
      r = {0, 0, 1};
      return true;
    default:
      break;
  }
  if (!is_integral(n.dtype)) return false;
  switch (n.op) {
    case Op::Const:
      if (n.slot >= 0) return false;
      r = {0, std::get<Scalar>(n.arg).i, std::get<Scalar>(n.arg).i};
      return std::get<Scalar>(n.arg).is_int;
    case Op::Iota: {
      r = {0, n.index.c, n.index.c};
      for (size_t v = 0; v < n.index.coef.size(); ++v) {
        const int64_t c = n.index.coef[v];
        if (int(v) == outer) {
          r.a = c;
          continue;
        }
        int64_t span;
        if (__builtin_mul_overflow(c, k.var_size[v] - 1, &span)) return false;
        (span < 0 ? r.lo : r.hi) += span;
      }
      return true;
    }
    case Op::Check: {  // NOTE [Parallel scatters]: a value that passed is within its size
      const CheckArg& c = std::get<CheckArg>(n.arg);
      if (c.kind != CheckKind::Bound) return false;
      r = {0, 0, c.size - 1};
      return true;
    }
    case Op::Cast: {
      const DType from = k.nodes[size_t(n.src[0])].dtype;
      if (from == DType::Bool) {
        r = {0, 0, 1};
        return true;
      }
      if (is_integral(from) && itemsize(from) <= itemsize(n.dtype))
        return index_range(k, n.src[0], outer, r);
      r = unbounded();  // a floating-point coordinate: bounded by a clamp, if at all
      return true;
    }
    case Op::Add:
    case Op::Sub:
      if (!both()) return false;
      if (n.op == Op::Sub) y = {-y.a, -y.hi, -y.lo, y.hi_open, y.lo_open};
      r.lo_open = x.lo_open || y.lo_open;
      r.hi_open = x.hi_open || y.hi_open;
      return !__builtin_add_overflow(x.a, y.a, &r.a) && !__builtin_add_overflow(x.lo, y.lo, &r.lo) &&
             !__builtin_add_overflow(x.hi, y.hi, &r.hi);
    case Op::Mul: {
      if (!both()) return false;
      if (!x.constant()) std::swap(x, y);
      if (!x.constant()) return false;  // neither side a constant
      const int64_t c = x.lo;
      int64_t a, lo, hi;
      if (__builtin_mul_overflow(y.a, c, &a) || __builtin_mul_overflow(y.lo, c, &lo) ||
          __builtin_mul_overflow(y.hi, c, &hi))
        return false;
      r = {a, std::min(lo, hi), std::max(lo, hi), c < 0 ? y.hi_open : y.lo_open,
           c < 0 ? y.lo_open : y.hi_open};
      if (c == 0) r = {0, 0, 0};
      return true;
    }
    case Op::Minimum:
    case Op::Maximum:
      // Clamps of coordinates that do not move with the outer var.
      if (!both() || !x.fixed() || !y.fixed()) return false;
      if (n.op == Op::Minimum) {
        r = {0, std::min(x.lo, y.lo), 0, x.lo_open || y.lo_open, x.hi_open && y.hi_open};
        r.hi = x.hi_open ? y.hi : y.hi_open ? x.hi : std::min(x.hi, y.hi);
        if (r.lo_open) r.lo = 0;
      } else {
        r = {0, 0, std::max(x.hi, y.hi), x.lo_open && y.lo_open, x.hi_open || y.hi_open};
        r.lo = x.lo_open ? y.lo : y.lo_open ? x.lo : std::max(x.lo, y.lo);
        if (r.hi_open) r.hi = 0;
      }
      return true;
    case Op::FloorDiv:
    case Op::Remainder: {
      // By a positive constant: Python's floor division and a remainder in [0, c).
      if (!both() || !y.constant() || y.lo <= 0) return false;
      const int64_t c = y.lo;
      if (n.op == Op::Remainder) {
        r = {0, 0, c - 1};
        return true;
      }
      if (!x.fixed()) return false;
      auto floor_div = [c](int64_t v) { return v / c - (v % c != 0 && v < 0 ? 1 : 0); };
      r = {0, floor_div(x.lo), floor_div(x.hi), x.lo_open, x.hi_open};
      return true;
    }
    case Op::Where:  // one of two coordinates (interpolation's taps)
      if (!index_range(k, n.src[1], outer, x) || !index_range(k, n.src[2], outer, y) ||
          x.a != y.a)
        return false;
      r = {x.a, std::min(x.lo, y.lo), std::max(x.hi, y.hi), x.lo_open || y.lo_open,
           x.hi_open || y.hi_open};
      return true;
    case Op::Abs:  // reflection padding's coordinates
      if (!index_range(k, n.src[0], outer, x) || !x.fixed()) return false;
      if (!x.lo_open && x.lo >= 0) {
        r = x;
      } else if (!x.hi_open && x.hi <= 0) {
        r = {0, -x.hi, -x.lo, false, x.lo_open};
      } else {
        r = {0, 0, std::max(x.lo_open ? 0 : -x.lo, x.hi_open ? 0 : x.hi), false,
             x.lo_open || x.hi_open};
      }
      return true;
    case Op::Shr:  // an arithmetic shift: floor division by a power of two
      if (!both() || !y.constant() || y.lo < 0 || y.lo > 62 || !x.fixed()) return false;
      r = {0, x.lo >> y.lo, x.hi >> y.lo, x.lo_open, x.hi_open};
      return true;
    case Op::BitAnd:  // with a mask: within [0, mask]
      if (!both()) return false;
      if (!x.constant()) std::swap(x, y);
      if (!x.constant() || x.lo < 0) return false;
      r = {0, 0, x.lo};
      return true;
    default:
      return false;
  }
}

}  // namespace

// NOTE [Parallel scatters]: a scatter ran in order on one thread, since two of its
// elements may write one place. Where its index is `a` times the outermost output var plus
// a part that spans less than |a| (a row's base plus a checked index within the row, as
// scatter_add along dim 1 and gather's backward have), different values of that var write
// different places, and its range is split across threads like a store's. Its checks must
// all pass before any element is written, on every thread: the kernel runs twice, the
// first pass checking (fault[2] == 0), the second, when none failed, writing. The check
// pass is vectorized either way (NOTE [Deferred checks]): it records failures and reruns
// strict only when one failed. scatter_add along dim 1 of 1024x1024 float32, its index an
// int64 remainder computed in the kernel: the kernel 9-10 ms -> 2.6-3.0, the op with its
// index 10.6 -> 3.2 ms (eager 4.7-5.4). Coordinates computed in floating point and cast are
// unbounded until a clamp (min/max), |.|, a remainder or a mask bounds them again: the
// gradients of interpolation, reflection/replication padding and average pooling (now a
// scatter at each window element's clamped coordinates, 0 added for the padding, rather
// than an ordered put_ of a flattened index) split by images. 16x64x32x32, 3x3 windows,
// stride 2, padding 1: the average pool's gradient 25.8 ms -> 0.2-0.36 (forward and
// backward 31 -> 1.25 ms, eager 4.8-5.0); each of bilinear upsampling's four gradient
// scatters of 8x32x64x64 2.7 -> 1.45 ms.
bool scatter_rows_disjoint(const LKernel& k) {
  if (k.out_dyn < 0 || k.batched || k.scan_var >= 0 || k.check_in_reduce || !k.params[0])
    return false;
  for (size_t p = 1; p < k.params.size(); ++p)
    if (!k.params[p] || k.params[p] == k.params[0]) return false;
  for (const LNode& n : k.nodes)
    if ((n.op == Op::Load || n.op == Op::Gather) && n.param == 0) return false;
  int outer = -1;
  for (size_t v = 0; v < k.var_size.size() && outer < 0; ++v)
    if (k.is_output_var[v]) outer = int(v);
  IndexRange r;
  if (outer < 0 || k.var_size[size_t(outer)] < 2 || !index_range(k, k.out_dyn, outer, r) ||
      r.lo_open || r.hi_open)
    return false;
  const int64_t a = r.a < 0 ? -r.a : r.a;
  return a > 0 && r.hi - r.lo < a;
}

bool scatter_two_pass(const LKernel& k) { return scatter_rows_disjoint(k) && !k.checks.empty(); }

namespace c_render {

// Whether a scatter's innermost loop writes a distinct element in each iteration and reads
// no memory that it writes, so that its iterations may run as vector lanes (in order, each
// element's updates still apply as they come): the index is something that loop does not
// change plus a coordinate that moves with it (index_add's row base plus the column), and
// no input is the output's memory.
bool Renderer::scatter_rows_distinct() const {
  std::vector<int> outs = output_vars();
  if (k.out_dyn < 0 || outs.size() < 2 || !k.params[0]) return false;
  for (size_t p = 1; p < k.params.size(); ++p)
    if (!k.params[p] || k.params[p] == k.params[0]) return false;
  for (const LNode& n : k.nodes)
    if ((n.op == Op::Load || n.op == Op::Gather) && n.param == 0) return false;
  const int in = outs.back();
  const LNode& at = k.nodes[k.out_dyn];
  if (at.op != Op::Add || at.src.size() != 2) return false;
  for (int side = 0; side < 2; ++side) {
    const LNode& moves = k.nodes[at.src[side]];
    if (moves.op == Op::Iota && coef(moves.index, in) != 0 && !uses_var(at.src[1 - side], in))
      return true;
  }
  return false;
}

void Renderer::render_index_checks() {
  // Every index is checked before anything is written: a fault leaves p0 untouched. The
  // pass opens only the loops the checks read: index_add's row index was checked for each
  // element of the row. The scatter's own loops then need no checks, and its inner loop
  // may run as vector lanes (scatter_rows_distinct): index_add of 4096 rows of 128 floats,
  // the kernel 385 -> 198-277 us (the op 0.41 -> 0.31-0.37 ms, eager 0.31).
  std::vector<int> outs = output_vars();
  size_t need = 1;
  for (size_t i = 0; i < k.nodes.size(); ++i)
    for (size_t j = 1; j < outs.size() && k.nodes[i].op == Op::Check; ++j)
      if (uses_var(int(i), outs[j])) need = std::max(need, j + 1);
  int depth = 1;
  if (outs.empty() || k.batched || stream_chunk) {
    depth = open_output_loops(false);
  } else {
    for (size_t j = 0; j < need; ++j) {
      const std::string x = var_name(k, outs[j]);
      line(depth++, j == 0 ? "for (int64_t " + x + " = start; " + x + " < end; ++" + x + ") {"
                           : loop(x, k.var_size[outs[j]]) + " {");
    }
  }
  scopes.emplace_back();
  for (size_t i = 0; i < k.nodes.size(); ++i)
    if (k.nodes[i].op == Op::Check) emit(int(i), depth);
  scopes.pop_back();
  while (depth > 1) line(--depth, "}");
  checks_done = true;
}

// The store at the scatter's computed index, inside its loops at `depth`.
void Renderer::render_scatter_store(int depth) {
  std::string at = "p0[" + emit(k.out_dyn, depth) + "]";
  const DType t = k.out_dtype;
  const LNode& r = k.nodes[k.root];
  const bool scaled = k.combine >= 0 && (k.combine & kScatterScaled);
  if (scaled && (t == DType::Float32 || t == DType::Float64) && r.op == Op::Mul &&
      k.nodes[r.src[0]].dtype == t && k.nodes[r.src[1]].dtype == t) {
    // index_add's alpha * source is added with one rounding, as on the CPU (an add with an
    // alpha). The product is this scatter's alone, so no other kernel computes it again;
    // only the scatter that index_add marks contracts it (NOTE [No contraction] in
    // render_c.cpp): a product fused in from its producer is rounded by itself, as on the
    // CPU (a gather's gradient of a weight computed as rand * 1e6 differed in 887 of 2989
    // sums by an ulp).
    std::string sum = std::string(t == DType::Float32 ? "__builtin_fmaf(" : "__builtin_fma(") +
                      emit(r.src[0], depth) + ", " + emit(r.src[1], depth) + ", old)";
    line(depth, "{ " + std::string(compute_ctype(t)) + " old = " + c_load(t, at) + ";");
    line(depth + 1, "old = " + sum + ";");
    line(depth + 1, at + " = " + c_store(t, "old") + "; }");
  } else if (k.combine < 0) {
    line(depth, at + " = " + c_store(k.out_dtype, emit(k.root, depth)) + ";");
  } else {
    std::string v = emit(k.root, depth);
    std::string T = compute_ctype(k.out_dtype);
    line(depth, "{ " + T + " old = " + c_load(k.out_dtype, at) + ";");
    line(depth + 1, c_reduce_step(ReduceKind(k.combine & ~kScatterScaled), k.out_dtype, "old", v));
    line(depth + 1, at + " = " + c_store(k.out_dtype, "old") + "; }");
  }
}

}  // namespace c_render

}  // namespace loom
