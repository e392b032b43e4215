// cdist's direct kernel and its backward (_cdist_forward, _cdist_backward), as
// DistanceOpsKernel.cpp computes them: for each pair of rows a reduction over the columns
// of |a - b| mapped by the norm (0, 1, 2, inf or a general p), so distances fuse with what
// reads them. (cdist's matrix-product form for p = 2 is composite and needs nothing here.)
// pdist's backward (_pdist_backward) goes through them; its forward gathers pair rows.
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include <cmath>

#include "aten/pointwise.h"
#include "aten/resample.h"

namespace loom::aten {

namespace {

using at::Tensor;
using namespace expr;

// Batch dims broadcast, then (r1, r2, m): x1's rows, x2's rows and the columns.
struct Pairs {
  Shape batch;
  int64_t r1, r2, m;
  // The batch dims followed by `tail`.
  Shape with(std::initializer_list<int64_t> tail) const {
    Shape s = batch;
    s.insert(s.end(), tail);
    return s;
  }
  Shape s4() const { return with({r1, r2, m}); }
};

Pairs pairs_of(const Tensor& x1, const Tensor& x2) {
  at::IntArrayRef b1(x1.sizes().data(), x1.dim() - 2), b2(x2.sizes().data(), x2.dim() - 2);
  auto batch = at::infer_size(b1, b2);
  return {Shape(batch.begin(), batch.end()), x1.size(-2), x2.size(-2), x1.size(-1)};
}

// x (batch', rows, m) broadcast to (batch, r1, r2, m), its rows along dim `at` (r1 or r2).
NodeRef spread(const Tensor& x, const Pairs& p, int at, DType t) {
  const int k = int(p.batch.size());
  Shape s3 = p.batch;
  s3.insert(s3.end(), {x.size(-2), p.m});
  NodeRef v = expand(cast(read_tensor(x), t), s3);
  IndexMap map{Shape(size_t(k + 2), 0), {}, {}};
  for (int d = 0; d < k + 3; ++d) {
    const int to = d < k ? d : d == k + at ? k : d == k + 2 ? k + 1 : -1;
    map.dim_of.push_back(to);
    map.mult.push_back(to < 0 ? 0 : 1);
  }
  return reindex(v, p.s4(), map);
}

void check_cdist(const Tensor& x1, const Tensor& x2, const char* kernel) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1),
              "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()),
              "cdist only supports floating-point dtypes, X1 got: ", x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()),
              "cdist only supports floating-point dtypes, X2 got: ", x2.scalar_type());
  const auto st = x1.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble, "\"", kernel, "\" not implemented for '",
              c10::toString(st), "'");
  TORCH_CHECK(x2.scalar_type() == st, "expected scalar type ", st, " but found ", x2.scalar_type());
}

// The p-norm over the last dim of `d` (|a - b|, shaped out_shape plus that dim), as
// DistanceOpsKernel.cpp computes it: a reduction of the norm's terms, then its root.
NodeRef p_norm_of(const NodeRef& d, double p, DType t, const Shape& out_shape) {
  const int axis = int(out_shape.size());
  ReduceKind kind = ReduceKind::Sum;
  NodeRef term;
  if (p == 0) {
    term = min(unary(Op::Ceil, d), 1.0);
  } else if (p == 1) {
    term = d;
  } else if (p == 2) {
    term = d * d;
  } else if (std::isinf(p)) {
    term = select(isnan(d), 0.0, d);  // the CPU's std::max keeps its 0 against a NaN
    kind = ReduceKind::Max;
  } else {
    term = binary(Op::Pow, d, constant(Scalar::of_float(p), t, d->shape));
  }
  Shape kept = out_shape;
  kept.push_back(1);
  IndexMap drop{Shape(kept.size(), 0), {}, {}};
  for (int i = 0; i < int(out_shape.size()); ++i) {
    drop.dim_of.push_back(i);
    drop.mult.push_back(1);
  }
  NodeRef agg = reindex(reduce(kind, term, {axis}, t), out_shape, drop);
  if (p == 2) {
    agg = unary(Op::Sqrt, agg);
  } else if (p != 0 && p != 1 && !std::isinf(p)) {
    // std::pow(agg, 1.0 / p) with p in the input's dtype: a double power
    const double e = t == DType::Float32 ? 1.0 / double(float(p)) : 1.0 / p;
    agg = cast(binary(Op::Pow, cast(agg, DType::Float64),
                      constant(Scalar::of_float(e), DType::Float64, out_shape)),
               t);
  }
  return agg;
}

Tensor cdist_forward_fn(const Tensor& x1, const Tensor& x2, double p,
                        c10::optional<int64_t> compute_mode) {
  check_operands("cdist", {x1, x2});
  check_cdist(x1, x2, "cdist");
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  const Pairs pr = pairs_of(x1, x2);
  const Shape out_shape = pr.with({pr.r1, pr.r2});
  Tensor out = result_like(at::empty(at::IntArrayRef(out_shape), x1.options().device(at::kMeta)));
  if (out.numel() == 0) return out;
  const DType t = to_loom(x1.scalar_type());
  EngineLock g(engine_mutex());
  if (pr.m == 0) {
    assign(out, constant(Scalar::of_int(0), t, out_shape));
    return out;
  }
  NodeRef d = abs(spread(x1, pr, 0, t) - spread(x2, pr, 1, t));
  assign(out, p_norm_of(d, p, t, out_shape));
  return out;
}

// d dist[i, j] / d x1[i, k], times grad[i, j], summed over j: the CPU's per-norm formulas.
Tensor cdist_backward_fn(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p,
                         const Tensor& cdist) {
  check_operands("_cdist_backward", {grad, x1, x2, cdist});
  check_cdist(x1, x2, "cdist_backward");
  const Pairs pr = pairs_of(x1, x2);
  const Shape g_shape = pr.with({pr.r1, pr.m});
  Tensor out = result_like(at::empty(at::IntArrayRef(g_shape), x1.options().device(at::kMeta)));
  if (out.numel() == 0) return out;
  const DType t = to_loom(x1.scalar_type());
  EngineLock g(engine_mutex());
  const Shape s4 = pr.s4();
  const int k = int(pr.batch.size());
  if (pr.r2 == 0 || p == 0) {
    assign(out, constant(Scalar::of_int(0), t, g_shape));
    return out;
  }
  NodeRef diff = spread(x1, pr, 0, t) - spread(x2, pr, 1, t);
  // grad and dist, (batch, r1, r2), along every column
  IndexMap by_pair{Shape(size_t(k + 2), 0), {}, {}};
  for (int d = 0; d < k + 3; ++d) {
    by_pair.dim_of.push_back(d < k + 2 ? d : -1);
    by_pair.mult.push_back(d < k + 2 ? 1 : 0);
  }
  const Shape pair_shape = pr.with({pr.r1, pr.r2});
  NodeRef gv = reindex(expand(cast(read_tensor(grad), t), pair_shape), s4, by_pair);
  NodeRef dist = reindex(expand(cast(read_tensor(cdist), t), pair_shape), s4, by_pair);
  NodeRef sign = unary(Op::Sign, diff), ad = abs(diff);
  NodeRef zero = constant(Scalar::of_int(0), t, s4), pv = constant(Scalar::of_float(p), t, s4);
  NodeRef term;
  if (p == 1) {
    term = gv * sign;
  } else if (p < 2) {
    NodeRef pm1 = pv - 1.0;
    term = ((sign * binary(Op::Pow, ad, pm1)) * gv) / binary(Op::Pow, dist, pm1);
    term = select(eq(dist, 0.0), zero, term);
    if (p < 1) term = select(eq(diff, 0.0), zero, term);
  } else if (p == 2) {
    term = select(eq(dist, 0.0), zero, (gv * diff) / dist);
  } else if (std::isinf(p)) {
    term = (gv * sign) * (1.0 - min(unary(Op::Ceil, abs(ad - dist)), 1.0));
  } else {
    term = ((diff * binary(Op::Pow, ad, pv - 2.0)) * gv) / binary(Op::Pow, dist, pv - 1.0);
    term = select(eq(dist, 0.0), zero, term);
  }
  IndexMap drop{Shape(size_t(k + 3), 0), {}, {}};
  for (int d = 0; d < k + 2; ++d) {
    drop.dim_of.push_back(d < k + 1 ? d : k + 2);
    drop.mult.push_back(1);
  }
  assign(out, reindex(reduce(ReduceKind::Sum, term, {k + 1}, t), g_shape, drop));
  return out;
}

// --- pdist: the distances of x's row pairs i < j, row-major, each from its pair's rows
// (NOTE [Pair rows]); its gradient is cdist's for the symmetric matrix of the pair
// gradients ---

// The flat positions i * n + j of the pairs i < j, in order, and of their mirrors j * n + i.
std::pair<Tensor, Tensor> pair_positions(int64_t n) {
  std::vector<int64_t> upper, lower;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      upper.push_back(i * n + j);
      lower.push_back(j * n + i);
    }
  const int64_t pairs = int64_t(upper.size());
  return {loom_tensor_of(upper, {pairs}), loom_tensor_of(lower, {pairs})};
}

void check_pdist(const Tensor& self, const char* what, const char* kernel) {
  TORCH_CHECK(self.is_contiguous(), what);
  const auto st = self.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble, "\"", kernel, "\" not implemented for '",
              c10::toString(st), "'");
}

Tensor pdist_forward_fn(const Tensor& self, double p) {
  check_operands("_pdist_forward", {self});
  check_pdist(self, "_pdist_forward requires contiguous input", "pdist");
  const int64_t n = self.size(0);
  if (n <= 1) return empty_loom({0}, self.scalar_type());
  if (self.size(1) == 0) return at::zeros({n * (n - 1) / 2}, self.options());
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  // NOTE [Pair rows]: each pair's rows are gathered at its own (i, j), computed from the
  // pair's number k as the CPU's kernel does (in double: i = n - 1/2 - sqrt((n - 1/2)^2 -
  // 2k - 1), truncated), and reduced over the columns with the row's elements as vector
  // lanes: half the work of cdist(x, x) and no gather of its upper triangle after (512x32:
  // 0.85-1.9 ms -> 0.61-0.67, eager 0.32; the index math per pair stays scalar).
  const int64_t m = self.size(1), pairs = n * (n - 1) / 2;
  Tensor out = empty_loom({pairs}, self.scalar_type());
  const DType t = to_loom(self.scalar_type());
  EngineLock g(engine_mutex());
  const Shape s2 = {pairs, m};
  NodeRef k = iota(DType::Int64, s2, 0);
  const double n2 = double(n) - 0.5;
  NodeRef root = unary(Op::Sqrt, binary(Op::Sub, constant(Scalar::of_float(n2 * n2 - 1), DType::Float64, s2),
                                       binary(Op::Mul, cast(k, DType::Float64),
                                              constant(Scalar::of_float(2), DType::Float64, s2))));
  NodeRef i = cast(binary(Op::Sub, constant(Scalar::of_float(n2), DType::Float64, s2), root), DType::Int64);
  // Row i's first pair is i n - i (i + 1) / 2; a root that rounded across a row's edge is
  // put back (the CPU takes the formula once per chunk and steps through the pairs after).
  auto row_start = [&](const NodeRef& r) {
    return binary(Op::Sub, binary(Op::Mul, r, int_const(n, s2)),
                  binary(Op::FloorDiv, binary(Op::Mul, r, binary(Op::Add, r, int_const(1, s2))),
                         int_const(2, s2)));
  };
  i = where(binary(Op::Lt, k, row_start(i)), binary(Op::Sub, i, int_const(1, s2)), i);
  NodeRef next = binary(Op::Add, i, int_const(1, s2));
  i = where(binary(Op::Ge, k, row_start(next)), next, i);
  NodeRef j = binary(Op::Add, binary(Op::Sub, k, row_start(i)), binary(Op::Add, i, int_const(1, s2)));
  // In range by construction; clamped so that no lane could read outside the rows.
  auto clamp = [&](const NodeRef& v) {
    return binary(Op::Minimum, binary(Op::Maximum, v, int_const(0, s2)), int_const(n - 1, s2));
  };
  NodeRef r = iota(DType::Int64, s2, 1);
  NodeRef d = abs(gather_at(self, {clamp(i), r}) - gather_at(self, {clamp(j), r}));
  assign(out, p_norm_of(d, p, t, {pairs}));
  return out;
}

Tensor pdist_backward_fn(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  check_operands("_pdist_backward", {grad, self, pdist});
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  check_pdist(self, "_pdist_backward requires self to be contiguous", "pdist_backward");
  const int64_t n = self.size(0);
  if (p == 0 || grad.numel() == 0 || self.numel() == 0) return at::zeros_like(self);
  auto [upper, lower] = pair_positions(n);
  auto symmetric = [&](const Tensor& v) {
    Tensor m = at::zeros({n * n}, self.options());
    m.index_put_({upper}, v);
    m.index_put_({lower}, v);
    return m.view({n, n});
  };
  return cdist_backward_fn(symmetric(grad), self, self, p, symmetric(pdist));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_pdist_forward", TORCH_FN(pdist_forward_fn));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward_fn));
  m.impl("_cdist_forward", TORCH_FN(cdist_forward_fn));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward_fn));
}

}  // namespace loom::aten
