// multi_margin_loss and multilabel_margin_loss, forward and backward: each row's hinges of
// the other classes' scores against the target classes', as LossMultiMargin.cpp and
// LossMultiLabelMargin.cpp compute them (terms in the input's dtype, sums over rows in
// double), so the losses and their gradients fuse like any reduction.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/pointwise.h"

namespace loom::aten {

namespace {

using at::Tensor;
using namespace expr;
namespace Reduction = at::Reduction;

bool has(const c10::optional<Tensor>& t) { return t.has_value() && t->defined(); }

// Rows and classes of the input, after the CPU's checks (frame: its kernel's name).
std::pair<int64_t, int64_t> check_multi_margin(const Tensor& input, const Tensor& target,
                                               const at::Scalar& p,
                                               const c10::optional<Tensor>& weight,
                                               const char* frame) {
  TORCH_CHECK(p.toInt() == 1 || p.toInt() == 2, "only p == 1 and p == 2 supported");
  const int64_t nd = input.dim();
  const bool valid =
      (nd == 2 && input.size(1) != 0) || (nd == 1 && input.size(0) != 0) || nd == 0;
  TORCH_CHECK(valid, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              input.sizes());
  const int64_t n = nd <= 1 ? 1 : input.size(0), c = nd == 0 ? 1 : input.size(nd - 1);
  LOOM_CHECK_AS_CPU(
      target.dim() <= 1 && target.numel() == n,
      at::multi_margin_loss(cpu_zeros_like(input), cpu_zeros_like(target).to(at::kLong), p),
      "inconsistent target size, got: ", target.sizes());
  const auto st = input.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble, "\"", frame, "\" not implemented for '",
              c10::toString(st), "'");
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  if (has(weight)) {
    TORCH_CHECK(weight->scalar_type() == st, "expected scalar type ", st, " but found ",
                weight->scalar_type());
    // The CPU reads weight[target] unchecked; here a short weight is an error.
    TORCH_CHECK(weight->numel() == c, "weight tensor should be defined either for all or no classes");
  }
  return {n, c};
}

// The per-element terms of row i, class j (shape (n, c), dtype t): z = margin - x[i, y_i] +
// x[i, j], and whether it counts (z > 0 and j != y_i); the target y (shape {n}) and the
// weight of each row's target (or null).
struct MarginTerms {
  NodeRef z, counts, target, weight;
};

MarginTerms margin_terms(const Tensor& input, const Tensor& target,
                         const c10::optional<Tensor>& weight, const at::Scalar& margin,
                         int64_t n, int64_t c, DType t) {
  const Shape s{n}, s2{n, c};
  const IndexMap rows{{0}, {0, -1}, {1, 0}};
  Tensor x = input.reshape({n, c}), y = target.reshape({n});
  NodeRef tg =
      checked_now(y, cast(read_tensor(y), DType::Int64), c, false, false, "target out of range");
  NodeRef xt = gather(buffer_of(x), t, storage_index(x, {iota(DType::Int64, s, 0), tg}));
  NodeRef m = constant(Scalar::of_float(margin.toDouble()), t, s2);
  NodeRef z = (m - reindex(xt, s2, rows)) + cast(read_tensor(x), t);
  NodeRef other = binary(Op::Ne, iota(DType::Int64, s2, 1), reindex(tg, s2, rows));
  NodeRef w;
  if (has(weight)) {
    Tensor wt = *weight;
    NodeRef at = binary(Op::Add, int_const(wt.storage_offset(), s),
                        binary(Op::Mul, tg, int_const(wt.stride(0), s)));
    w = reindex(gather(buffer_of(wt), t, at), s2, rows);
  }
  return {z, both(gt(z, 0.0), other), tg, w};
}

NodeRef row_sum(const NodeRef& v, int64_t n, DType t) {
  return reindex(reduce(ReduceKind::Sum, v, {1}, t), {n}, IndexMap{{0, 0}, {0}, {1}});
}

void multi_margin_into(const Tensor& input, const Tensor& target, const at::Scalar& p,
                       const at::Scalar& margin, const c10::optional<Tensor>& weight,
                       int64_t reduction, Tensor& output, int64_t n, int64_t c) {
  const DType t = to_loom(input.scalar_type());
  EngineLock g(engine_mutex());
  MarginTerms m = margin_terms(input, target, weight, margin, n, c, t);
  NodeRef h = p.toInt() == 1 ? m.z : m.z * m.z;
  if (m.weight) h = h * m.weight;
  NodeRef per_row = row_sum(select(m.counts, h, 0.0), n, t) / double(c);
  if (reduction == Reduction::None && target.dim() > 0) {
    assign(output, per_row);
    return;
  }
  NodeRef total = reindex(reduce(ReduceKind::Sum, cast(per_row, DType::Float64), {0}, DType::Float64),
                          {}, IndexMap{{0}, {}, {}});
  if (reduction == Reduction::Mean) total = total / double(n);
  assign(output, cast(total, t));
}

at::IntArrayRef loss_sizes(const Tensor& target, int64_t reduction) {
  return reduction == Reduction::None && target.dim() > 0 ? target.sizes() : at::IntArrayRef();
}

Tensor multi_margin_fn(const Tensor& input, const Tensor& target, const at::Scalar& p,
                       const at::Scalar& margin, const c10::optional<Tensor>& weight,
                       int64_t reduction) {
  check_operands("multi_margin_loss", {input, target});
  auto [n, c] = check_multi_margin(input, target, p, weight, "multi_margin_loss_cpu_kernel");
  Tensor out = result_like(at::empty(loss_sizes(target, reduction), input.options().device(at::kMeta)));
  multi_margin_into(input, target, p, margin, weight, reduction, out, n, c);
  return out;
}

Tensor& multi_margin_out(const Tensor& input, const Tensor& target, const at::Scalar& p,
                         const at::Scalar& margin, const c10::optional<Tensor>& weight,
                         int64_t reduction, Tensor& out) {
  check_operands("multi_margin_loss", {input, target, out});
  auto [n, c] = check_multi_margin(input, target, p, weight, "multi_margin_loss_cpu_kernel");
  out.resize_(loss_sizes(target, reduction));
  multi_margin_into(input, target, p, margin, weight, reduction, out, n, c);
  return out;
}

// A loss's gradient (shape (n, c)) times grad_output: one value, or one per row.
void write_scaled_grad(Tensor& grad_input, const NodeRef& grad, const Tensor& grad_output,
                       int64_t reduction, int64_t n, int64_t c, DType t) {
  const Shape s2{n, c};
  NodeRef go;
  if (reduction != Reduction::None || grad_output.dim() == 0)
    go = expand(cast(read_tensor(grad_output.reshape({})), t), s2);
  else
    go = reindex(cast(read_tensor(grad_output), t), s2, IndexMap{{0}, {0, -1}, {1, 0}});
  Tensor gi = grad_input.view({n, c});
  write_tensor(gi, grad * go);
}

void check_grad_output(const Tensor& grad_output, int64_t reduction, int64_t n) {
  if (reduction != Reduction::None || grad_output.dim() == 0) {
    TORCH_CHECK(grad_output.numel() == 1, "Expected a single element grad_output tensor, but got: ",
                grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.dim() == 1 && grad_output.size(0) == n,
                "Expected grad_output of size ", n, ", but got: ", grad_output.sizes());
  }
}

// d/dx[i, j] for j != y_i: g (p = 1) or 2 g z (p = 2) where z > 0, times weight[y_i]; at j
// = y_i minus the row's sum of those; all times grad_output. g is 1/c, or 1/(n c) for mean.
void multi_margin_backward_into(const Tensor& grad_output, const Tensor& input,
                                const Tensor& target, const at::Scalar& p,
                                const at::Scalar& margin, const c10::optional<Tensor>& weight,
                                int64_t reduction, Tensor& grad_input, int64_t n, int64_t c) {
  const DType t = to_loom(input.scalar_type());
  EngineLock g(engine_mutex());
  MarginTerms m = margin_terms(input, target, weight, margin, n, c, t);
  const Shape s2{n, c};
  const double gv = reduction == Reduction::Mean ? 1. / double(n * c) : 1. / double(c);
  NodeRef gs = constant(Scalar::of_float(gv), t, s2);
  NodeRef h = p.toInt() == 1 ? gs : (2.0 * gs) * m.z;
  if (m.weight) h = h * m.weight;
  h = select(m.counts, h, 0.0);
  const IndexMap rows{{0}, {0, -1}, {1, 0}};
  NodeRef at_target = binary(Op::Eq, iota(DType::Int64, s2, 1), reindex(m.target, s2, rows));
  NodeRef grad = select(at_target, reindex(-row_sum(h, n, t), s2, rows), h);
  write_scaled_grad(grad_input, grad, grad_output, reduction, n, c, t);
}

Tensor multi_margin_backward_fn(const Tensor& grad_output, const Tensor& input,
                                const Tensor& target, const at::Scalar& p,
                                const at::Scalar& margin, const c10::optional<Tensor>& weight,
                                int64_t reduction) {
  check_operands("multi_margin_loss_backward", {grad_output, input, target});
  auto [n, c] =
      check_multi_margin(input, target, p, weight, "multi_margin_loss_backward_cpu_kernel");
  check_grad_output(grad_output, reduction, n);
  Tensor out = result_like(at::empty(input.sizes(), input.options().device(at::kMeta)));
  multi_margin_backward_into(grad_output, input, target, p, margin, weight, reduction, out, n, c);
  return out;
}

Tensor& multi_margin_backward_out(const Tensor& grad_output, const Tensor& input,
                                  const Tensor& target, const at::Scalar& p,
                                  const at::Scalar& margin, const c10::optional<Tensor>& weight,
                                  int64_t reduction, Tensor& grad_input) {
  check_operands("multi_margin_loss_backward", {grad_output, input, target, grad_input});
  auto [n, c] =
      check_multi_margin(input, target, p, weight, "multi_margin_loss_backward_cpu_kernel");
  check_grad_output(grad_output, reduction, n);
  grad_input.resize_as_(input);
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  multi_margin_backward_into(grad_output, input, target, p, margin, weight, reduction, grad_input,
                             n, c);
  return grad_input;
}

// --- multilabel_margin_loss: target rows list class indices up to the first -1 ---

// Rows and classes, after the CPU's checks in its order (frame: its kernel's name).
std::pair<int64_t, int64_t> check_multilabel(const Tensor& input, const Tensor& target,
                                             const char* frame) {
  const int64_t nd = input.dim();
  const int64_t n = nd <= 1 ? 1 : input.size(0), c = nd == 0 ? 1 : input.size(nd - 1);
  const bool valid =
      (nd == 2 && input.size(1) != 0) || (nd == 1 && input.size(0) != 0) || nd == 0;
  TORCH_CHECK(valid, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              input.sizes());
  const bool fits = nd <= 1 ? target.dim() <= 1 && target.numel() == c
                            : target.dim() == 2 && target.size(0) == n && target.size(1) == c;
  LOOM_CHECK_AS_CPU(
      fits, at::multilabel_margin_loss(cpu_zeros_like(input), cpu_zeros_like(target).to(at::kLong)),
      "inconsistent size ", target.sizes(), " for argument #2 'target'");
  if (input.numel() > 0)
    check_now(target, c, false, false, "argument #2 'target' is out of range", -1);
  const auto st = input.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble, "\"", frame, "\" not implemented for '",
              c10::toString(st), "'");
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  return {n, c};
}

// Over (n, m, d): row i's m-th listed target t (valid while no -1 came before it) against
// class d. z = 1 - x[i, t] + x[i, d] in the input's dtype.
struct LabelTerms {
  NodeRef valid, safe, z;  // (n, m), (n, m), (n, m, d)
};

LabelTerms label_terms(const Tensor& input, const Tensor& target, int64_t n, int64_t c, DType t) {
  const Shape s2{n, c}, s3{n, c, c};
  Tensor x = input.reshape({n, c}), y = target.reshape({n, c});
  // -1 <= target < c, checked when the loss is realized (at the op when already known)
  NodeRef tg = binary(Op::Sub,
                      checked(binary(Op::Add, cast(read_tensor(y), DType::Int64), int_const(1, s2)),
                              c + 1, false, false, "argument #2 'target' is out of range"),
                      int_const(1, s2));
  NodeRef m = iota(DType::Int64, s2, 1);
  NodeRef first_neg = reduce(ReduceKind::Min, where(lt(tg, int_const(0, s2)), m, int_const(c, s2)),
                             {1}, DType::Int64);
  NodeRef valid = lt(m, reindex(first_neg, s2, IndexMap{{0, 0}, {0, -1}, {1, 0}}));
  NodeRef safe = where(valid, tg, int_const(0, s2));
  NodeRef xt = gather(buffer_of(x), t, storage_index(x, {iota(DType::Int64, s2, 0), safe}));
  NodeRef z = (1.0 - reindex(xt, s3, IndexMap{{0, 0}, {0, 1, -1}, {1, 1, 0}})) +
              reindex(cast(read_tensor(x), t), s3, IndexMap{{0, 0}, {0, -1, 1}, {1, 0, 1}});
  return {valid, safe, z};
}

// (n, m) -> (n, m, d) and (n, d) -> (n, m, d)
const IndexMap kByTarget{{0, 0}, {0, 1, -1}, {1, 1, 0}};
const IndexMap kByClass{{0, 0}, {0, -1, 1}, {1, 0, 1}};

void multilabel_into(const Tensor& input, const Tensor& target, int64_t reduction, Tensor& output,
                     Tensor& is_target, int64_t n, int64_t c) {
  const DType t = to_loom(input.scalar_type());
  const Shape s2{n, c}, s3{n, c, c};
  EngineLock g(engine_mutex());
  LabelTerms l = label_terms(input, target, n, c, t);
  // is_target[i, d]: some valid listed target of row i is d (over (n, d, m), m last)
  NodeRef listed = both(reindex(l.valid, s3, kByClass),
                        binary(Op::Eq, iota(DType::Int64, s3, 1), reindex(l.safe, s3, kByClass)));
  NodeRef is_t = reindex(reduce(ReduceKind::Max, cast(listed, t), {2}, t), s2,
                         IndexMap{{0, 0, 0}, {0, 1}, {1, 1}});
  Tensor it = is_target.view({n, c});
  write_tensor(it, is_t);
  NodeRef counts = both(both(reindex(l.valid, s3, kByTarget),
                             binary(Op::Eq, reindex(is_t, s3, kByClass), constant(Scalar::of_int(0), t, s3))),
                        gt(l.z, 0.0));
  NodeRef row = reindex(reduce(ReduceKind::Sum, cast(select(counts, l.z, 0.0), DType::Float64),
                               {1, 2}, DType::Float64),
                        {n}, IndexMap{{0, 0, 0}, {0}, {1}});
  if (reduction == Reduction::None && target.dim() > 1) {
    assign(output, cast(row, t) / double(c));
    return;
  }
  NodeRef total = reindex(reduce(ReduceKind::Sum, row, {0}, DType::Float64), {},
                          IndexMap{{0}, {}, {}}) / double(c);
  if (reduction == Reduction::Mean) total = total / double(n);
  assign(output, cast(total, t));
}

std::tuple<Tensor, Tensor> multilabel_forward_fn(const Tensor& input, const Tensor& target,
                                                 int64_t reduction) {
  check_operands("multilabel_margin_loss", {input, target});
  auto [n, c] = check_multilabel(input, target, "multilabel_margin_loss_forward_out_frame");
  const auto meta = input.options().device(at::kMeta);
  Tensor out = result_like(at::empty(reduction == Reduction::None && target.dim() > 1
                                         ? at::IntArrayRef(target.sizes().data(), 1)
                                         : at::IntArrayRef(),
                                     meta));
  Tensor is_target = result_like(at::empty(target.sizes(), meta));
  multilabel_into(input, target, reduction, out, is_target, n, c);
  return {out, is_target};
}

std::tuple<Tensor&, Tensor&> multilabel_forward_out(const Tensor& input, const Tensor& target,
                                                    int64_t reduction, Tensor& output,
                                                    Tensor& is_target) {
  check_operands("multilabel_margin_loss", {input, target, output, is_target});
  auto [n, c] = check_multilabel(input, target, "multilabel_margin_loss_forward_out_frame");
  if (reduction != Reduction::None || target.dim() <= 1)
    output.resize_({});
  else
    output.resize_({n});
  is_target.resize_as_(target);
  TORCH_CHECK(is_target.is_contiguous(), "is_target must be contiguous");
  multilabel_into(input, target, reduction, output, is_target, n, c);
  return {output, is_target};
}

// For each valid listed target t of row i and class d that is not a target with z > 0, the
// CPU adds g at d and takes g from t; g is 1/c (1/(n c) for mean), then all times
// grad_output. The is_target given (the forward's) says which classes are targets.
void multilabel_backward_into(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                              int64_t reduction, const Tensor& is_target, Tensor& grad_input,
                              int64_t n, int64_t c) {
  const DType t = to_loom(input.scalar_type());
  const Shape s2{n, c}, s3{n, c, c};
  EngineLock g(engine_mutex());
  LabelTerms l = label_terms(input, target, n, c, t);
  NodeRef it = cast(read_tensor(is_target.reshape({n, c})), t);
  // 0 <= is_target <= 1, checked when the gradient is realized
  NodeRef bad = cast(either(lt(it, 0.0), gt(it, 1.0)), DType::Int64);
  it = where(binary(Op::Eq, checked(bad, 1, false, false, "argument #5 'is_target' is out of range"),
                    int_const(0, s2)),
             it, it);
  NodeRef hit = both(both(reindex(l.valid, s3, kByTarget),
                          binary(Op::Eq, reindex(it, s3, kByClass), constant(Scalar::of_int(0), t, s3))),
                     gt(l.z, 0.0));
  const double gv = reduction == Reduction::Mean ? 1. / double(n * c) : 1. / double(c);
  NodeRef gs = select(hit, constant(Scalar::of_float(gv), t, s3), 0.0);
  // += g at d: over m (axis 1); -= g at t: each (i, m)'s total, summed where t == the class
  NodeRef plus = reindex(reduce(ReduceKind::Sum, gs, {1}, t), s2, IndexMap{{0, 0, 0}, {0, 2}, {1, 1}});
  NodeRef per_target = reindex(reduce(ReduceKind::Sum, gs, {2}, t), s2, IndexMap{{0, 0, 0}, {0, 1}, {1, 1}});
  NodeRef at_class = both(reindex(l.valid, s3, kByClass),
                          binary(Op::Eq, iota(DType::Int64, s3, 1), reindex(l.safe, s3, kByClass)));
  NodeRef minus = reindex(reduce(ReduceKind::Sum, select(at_class, reindex(per_target, s3, kByClass), 0.0),
                                 {2}, t),
                          s2, IndexMap{{0, 0, 0}, {0, 1}, {1, 1}});
  write_scaled_grad(grad_input, plus - minus, grad_output, reduction, n, c, t);
}

void check_multilabel_backward(const Tensor& grad_output, const Tensor& target,
                               const Tensor& is_target, int64_t reduction, int64_t n) {
  TORCH_CHECK(is_target.sizes() == target.sizes(), "inconsistent is_target size: ",
              is_target.sizes(), " for target of size: ", target.sizes());
  check_grad_output(grad_output, reduction, n);
}

Tensor multilabel_backward_fn(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                              int64_t reduction, const Tensor& is_target) {
  check_operands("multilabel_margin_loss_backward", {grad_output, input, target, is_target});
  auto [n, c] = check_multilabel(input, target, "multilabel_margin_loss_backward_out_frame");
  check_multilabel_backward(grad_output, target, is_target, reduction, n);
  Tensor out = result_like(at::empty(input.sizes(), input.options().device(at::kMeta)));
  multilabel_backward_into(grad_output, input, target, reduction, is_target, out, n, c);
  return out;
}

Tensor& multilabel_backward_out(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                                int64_t reduction, const Tensor& is_target, Tensor& grad_input) {
  check_operands("multilabel_margin_loss_backward",
                 {grad_output, input, target, is_target, grad_input});
  auto [n, c] = check_multilabel(input, target, "multilabel_margin_loss_backward_out_frame");
  check_multilabel_backward(grad_output, target, is_target, reduction, n);
  grad_input.resize_as_(input);
  TORCH_CHECK(grad_input.is_contiguous(), "grad_input must be contiguous");
  multilabel_backward_into(grad_output, input, target, reduction, is_target, grad_input, n, c);
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multi_margin_loss", TORCH_FN(multi_margin_fn));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_backward_fn));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabel_forward_fn));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(multilabel_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_backward_fn));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(multilabel_backward_out));
}

}  // namespace loom::aten
