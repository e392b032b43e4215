// Losses and their backward ops: an elementwise loss (CPU's formula) reduced by sum or
// mean, and gradients that are one pointwise value; embedding's backward, a scatter-add of
// gradient rows; xlogy, which kl_div is built from.
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MetaFunctions.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>
#include <numeric>

#include "aten/pointwise.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using V = std::vector<NodeRef>;
using namespace expr;
namespace Reduction = at::Reduction;

// PyTorch's apply_loss_reduction of the elementwise loss `v` (math dtype) of an op whose
// result dtype is `t`: CPU stores the unreduced loss in `t`, then sums it in the math dtype.
NodeRef reduce_loss(NodeRef v, int64_t reduction, DType t) {
  if (reduction == Reduction::None) return v;
  const DType math = v->dtype;
  if (math != t) v = cast(cast(v, t), math);
  const int rank = int(v->shape.size());
  const int64_t count = numel(v->shape);
  NodeRef sum = v;
  if (rank > 0) {
    std::vector<int> axes(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
    sum = reindex(reduce(ReduceKind::Sum, v, axes, math), {},
                  IndexMap{Shape(size_t(rank), 0), {}, {}});
  }
  if (reduction == Reduction::Mean) sum = sum / double(count);  // empty: 0 / 0 is NaN, as CPU
  return sum;
}

void check_out_dtype(const Tensor& out, const Tensor& meta) {
  TORCH_CHECK(out.scalar_type() == meta.scalar_type(), "Expected out tensor to have dtype ",
              meta.scalar_type(), ", but got ", out.scalar_type(), " instead");
}

// Writes loss(x, y) over self and target broadcast together, reduced, into out.
template <class Loss>
Tensor& loss_into(Tensor& out, const Tensor& self, const Tensor& target, int64_t reduction,
                  Loss loss) {
  Shape s = shape_of(at::infer_size(self.sizes(), target.sizes()));
  DType t = to_loom(out.scalar_type()), math = math_of(t);
  EngineLock g(engine_mutex());
  assign(out, reduce_loss(loss(operand(self, s, math), operand(target, s, math)), reduction, t));
  return out;
}

// The gradient of a pointwise loss w.r.t. self: as CPU, a contiguous tensor of the operands'
// broadcast shape, all of one floating dtype.
Tensor& loss_grad_into(Tensor& out, const char* op, const Tensor& dy, const Tensor& self,
                       const Tensor& target) {
  check_operands(op, {dy, self, target, out});
  check_floating(op, self.scalar_type());
  for (const Tensor& t : {dy, target, out})
    TORCH_CHECK(t.scalar_type() == self.scalar_type(), op, ": expected scalar type ",
                self.scalar_type(), " but found ", t.scalar_type());
  at::native::resize_output(
      out, at::infer_size(at::infer_size(self.sizes(), target.sizes()), dy.sizes()));
  return out;
}

// 1 / n for a mean, else 1: the factor of every gradient element.
double norm_of(int64_t reduction, const Tensor& self, double scale = 1.0) {
  return reduction == Reduction::Mean ? scale / double(self.numel()) : scale;
}

// --- mse_loss ---

Tensor& mse_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, Tensor& out) {
  check_operands("mse_loss", {self, target, out});
  Tensor meta = at::meta::mse_loss(to_meta(self), to_meta(target), reduction);
  check_floating("mse_loss", meta.scalar_type());
  check_out_dtype(out, meta);
  at::native::resize_output(out, meta.sizes());
  return loss_into(out, self, target, reduction, [](const NodeRef& x, const NodeRef& y) {
    NodeRef d = x - y;
    return d * d;
  });
}
Tensor mse_loss_fn(const Tensor& self, const Tensor& target, int64_t reduction) {
  Tensor out = result_like(at::meta::mse_loss(to_meta(self), to_meta(target), reduction));
  return mse_loss_out(self, target, reduction, out);
}

Tensor& mse_loss_backward_out(const Tensor& dy, const Tensor& self, const Tensor& target,
                              int64_t reduction, Tensor& out) {
  loss_grad_into(out, "mse_loss_backward", dy, self, target);
  const double norm = norm_of(reduction, self, 2.0);
  return pointwise_into(out, {dy, self, target},
                        [&](const V& v) { return norm * (v[1] - v[2]) * v[0]; });
}
Tensor mse_loss_backward_fn(const Tensor& dy, const Tensor& self, const Tensor& target,
                            int64_t reduction) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return mse_loss_backward_out(dy, self, target, reduction, out);
}

// --- smooth_l1_loss and huber_loss ---

Tensor& smooth_l1_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double beta,
                           Tensor& out) {
  check_operands("smooth_l1_loss", {self, target, out});
  Tensor meta = at::meta::smooth_l1_loss(to_meta(self), to_meta(target), reduction, beta);
  check_floating("smooth_l1_loss", meta.scalar_type());
  check_out_dtype(out, meta);
  at::native::resize_output(out, meta.sizes());
  return loss_into(out, self, target, reduction, [&](const NodeRef& x, const NodeRef& y) {
    NodeRef z = abs(x - y), b = lit(beta, z);
    return select(lt(z, b), 0.5 * z * z / b, z - 0.5 * b);
  });
}
Tensor smooth_l1_loss_fn(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  Tensor out =
      result_like(at::meta::smooth_l1_loss(to_meta(self), to_meta(target), reduction, beta));
  return smooth_l1_loss_out(self, target, reduction, beta, out);
}

Tensor& smooth_l1_loss_backward_out(const Tensor& dy, const Tensor& self, const Tensor& target,
                                    int64_t reduction, double beta, Tensor& out) {
  loss_grad_into(out, "smooth_l1_loss_backward", dy, self, target);
  const double norm = norm_of(reduction, self);
  return pointwise_into(out, {dy, self, target}, [&](const V& v) {
    NodeRef x = v[1] - v[2], n = lit(norm, x), b = lit(beta, x);
    NodeRef inner = select(ge(x, b), n * v[0], n * x * v[0] / b);
    return select(le(x, -b), -n * v[0], inner);
  });
}
Tensor smooth_l1_loss_backward_fn(const Tensor& dy, const Tensor& self, const Tensor& target,
                                  int64_t reduction, double beta) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return smooth_l1_loss_backward_out(dy, self, target, reduction, beta, out);
}

// The CPU's huber_loss result: empty_like(input), reduced to 0-dim unless reduction is
// none. PyTorch's meta huber_loss is Python; it stays for a target of another shape or
// dtype, where the CPU's TensorIterator resizes or casts.
Tensor huber_meta(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  if (target.sizes() != self.sizes() || target.scalar_type() != self.scalar_type())
    return at::huber_loss(to_meta(self), to_meta(target), reduction, delta);
  if (reduction == Reduction::None) return at::empty_like(to_meta(self));
  return at::detail::empty_meta({}, self.scalar_type(), c10::nullopt);
}

Tensor& huber_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double delta,
                       Tensor& out) {
  check_operands("huber_loss", {self, target, out});
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.")
  Tensor meta = huber_meta(self, target, reduction, delta);
  const c10::ScalarType st = meta.scalar_type();
  static const CpuVerdicts verdicts;  // the dtypes the running torch's CPU takes (no complex)
  verdicts.check_beside_reduced_floats(
      st, [&] { at::huber_loss(probe_operand(st), probe_operand(st)); });
  check_out_dtype(out, meta);
  at::native::resize_output(out, meta.sizes());
  return loss_into(out, self, target, reduction, [&](const NodeRef& x, const NodeRef& y) {
    NodeRef z = abs(x - y), d = lit(delta, z);
    return select(lt(z, d), 0.5 * z * z, d * (z - 0.5 * d));
  });
}
Tensor huber_loss_fn(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  // The CPU computes into empty_like(self): a promoted dtype self's cannot hold raises.
  const c10::ScalarType common = at::result_type(self, target);
  TORCH_CHECK(at::canCast(common, self.scalar_type()), "result type ", common,
              " can't be cast to the desired output type ", self.scalar_type());
  Tensor out = result_like(huber_meta(self, target, reduction, delta));
  return huber_loss_out(self, target, reduction, delta, out);
}

Tensor& huber_loss_backward_out(const Tensor& dy, const Tensor& self, const Tensor& target,
                                int64_t reduction, double delta, Tensor& out) {
  loss_grad_into(out, "huber_loss_backward", dy, self, target);
  const double norm = norm_of(reduction, self);
  return pointwise_into(out, {dy, self, target}, [&](const V& v) {
    NodeRef x = v[1] - v[2], n = lit(norm, x), d = lit(delta, x);
    NodeRef inner = select(ge(x, d), n * v[0] * d, n * x * v[0]);
    return select(le(x, -d), -n * v[0] * d, inner);
  });
}
Tensor huber_loss_backward_fn(const Tensor& dy, const Tensor& self, const Tensor& target,
                              int64_t reduction, double delta) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return huber_loss_backward_out(dy, self, target, reduction, delta, out);
}

// --- binary_cross_entropy: logs clamped at -100; an input outside [0, 1] faults ---

constexpr const char* kBceRange = "all elements of input should be between 0 and 1";

// The target and weight read at self's shape (the target has self's numel).
// The CPU's binary cross entropy kernels iterate over squeezed operands: a target of [3]
// fits an input of [3, 1], and broadcasts within the squeezed input's shape (a target of
// [1, 4] against [3, 4]), with TensorIterator's dtype and shape checks.
Tensor bce_target(const Tensor& self, const Tensor& target) {
  TORCH_CHECK(target.scalar_type() == self.scalar_type(), "Found dtype ", target.scalar_type(),
              " but expected ", self.scalar_type());
  if (target.sizes() == self.sizes()) return target;
  auto squeezed = [](at::IntArrayRef s) {
    std::vector<int64_t> v;
    for (int64_t d : s)
      if (d != 1) v.push_back(d);
    return v;
  };
  const std::vector<int64_t> si = squeezed(self.sizes()), st = squeezed(target.sizes());
  const std::vector<int64_t> b = at::infer_size(si, st);
  TORCH_CHECK(b == si, "output with shape ", at::IntArrayRef(si),
              " doesn't match the broadcast shape ", at::IntArrayRef(b));
  return target.reshape(st).expand(si).reshape(self.sizes());
}

std::vector<Tensor> bce_operands(const Tensor& self, const Tensor& target,
                                 const c10::optional<Tensor>& weight) {
  std::vector<Tensor> in{self, bce_target(self, target)};
  if (weight.has_value() && weight->defined()) {
    // The CPU multiplies the loss by the weight in place: it must broadcast to the input.
    const std::vector<int64_t> b = at::infer_size(self.sizes(), weight->sizes());
    TORCH_CHECK(at::IntArrayRef(b) == self.sizes(), "output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", at::IntArrayRef(b));
    in.push_back(*weight);
  }
  return in;
}

// The CPU's result: laid out as the input (empty_like) for reduction none, else 0-dim.
// (PyTorch's meta binary_cross_entropy is the Python decomposition: 58 us a call.)
Tensor bce_meta(const Tensor& self, int64_t reduction) {
  if (reduction == Reduction::None) return at::empty_like(to_meta(self));
  return at::detail::empty_meta({}, self.scalar_type(), c10::nullopt);
}

NodeRef bce_loss(const V& v) {
  const NodeRef &x = v[0], &y = v[1];
  NodeRef loss = (y - 1.0) * max(log1p(-x), -100.0) - y * max(log(x), -100.0);
  // x in [0, 1] (NaN is not) or the kernel stops with CPU's message.
  NodeRef bad = int_const(-1, x->shape);
  NodeRef ok = checked(where(both(ge(x, 0.0), le(x, 1.0)), int_const(0, x->shape), bad), 1, false,
                       false, kBceRange);
  loss = where(binary(Op::Eq, ok, int_const(0, x->shape)), loss, lit(NAN, loss));
  if (v.size() > 2) loss = loss * v[2];
  return loss;
}

Tensor& binary_cross_entropy_out(const Tensor& self, const Tensor& target,
                                 const c10::optional<Tensor>& weight, int64_t reduction,
                                 Tensor& out) {
  check_operands("binary_cross_entropy", {self, target, out});
  if (weight.has_value()) check_operands("binary_cross_entropy", {*weight});
  Tensor meta = bce_meta(self, reduction);
  check_floating("binary_cross_entropy", meta.scalar_type());
  check_out_dtype(out, meta);
  at::native::resize_output(out, meta.sizes());
  const Shape s = shape_of(self.sizes());
  const DType t = to_loom(out.scalar_type()), math = math_of(t);
  EngineLock g(engine_mutex());
  V v;
  for (const Tensor& x : bce_operands(self, target, weight)) v.push_back(operand(x, s, math));
  assign(out, reduce_loss(bce_loss(v), reduction, t));
  return out;
}
Tensor binary_cross_entropy_fn(const Tensor& self, const Tensor& target,
                               const c10::optional<Tensor>& weight, int64_t reduction) {
  Tensor out = result_like(bce_meta(self, reduction));
  return binary_cross_entropy_out(self, target, weight, reduction, out);
}

// d/dx = dy * (x - y) / max((1 - x) x, 1e-12), times the weight, over n for a mean.
Tensor& binary_cross_entropy_backward_out(const Tensor& dy, const Tensor& self,
                                          const Tensor& target, const c10::optional<Tensor>& weight,
                                          int64_t reduction, Tensor& out) {
  check_operands("binary_cross_entropy_backward", {dy, self, target, out});
  if (weight.has_value()) check_operands("binary_cross_entropy_backward", {*weight});
  check_floating("binary_cross_entropy_backward", self.scalar_type());
  check_out_dtype(out, self);
  at::native::resize_output(out, self.sizes());
  const double n = double(self.numel());
  std::vector<Tensor> in = bce_operands(self, target, weight);
  in.insert(in.begin(), dy);
  return pointwise_into(out, in, [&](const V& v) {
    const NodeRef &g = v[0], &x = v[1], &y = v[2];
    NodeRef r = g * (x - y) / max((1.0 - x) * x, 1e-12);
    if (v.size() > 3) r = r * v[3];
    if (reduction == Reduction::Mean) r = r / n;
    return r;
  });
}
Tensor binary_cross_entropy_backward_fn(const Tensor& dy, const Tensor& self, const Tensor& target,
                                        const c10::optional<Tensor>& weight, int64_t reduction) {
  Tensor out = result_like(at::empty_like(to_meta(self)));
  return binary_cross_entropy_backward_out(dy, self, target, weight, reduction, out);
}

// --- xlogy: x * log(y), 0 where x == 0, NaN where y is NaN ---

NodeRef xlogy(const NodeRef& x, const NodeRef& y) {
  NodeRef r = select(eq(x, 0.0), 0.0, x * log(y));
  return select(isnan(y), lit(NAN, r), r);
}

// The CPU's verdict on xlogy's computation dtype (no complex code).
void check_xlogy_dtype(c10::ScalarType st) {
  static const CpuVerdicts verdicts;
  verdicts.check(st, [&] { at::xlogy(probe_operand(st), probe_operand(st)); });
}

Tensor xlogy_fn(const Tensor& self, const Tensor& other) {
  check_operands("xlogy", {self, other});
  Tensor meta = at::meta::xlogy(to_meta(self), to_meta(other));
  check_xlogy_dtype(meta.scalar_type());
  return pointwise_result(meta, {self, other}, [](const V& v) { return xlogy(v[0], v[1]); });
}
Tensor& xlogy_ip(Tensor& self, const Tensor& other) {
  check_operands("xlogy_", {self, other});
  Tensor m = to_meta(self);
  at::meta::xlogy_(m, to_meta(other));
  check_xlogy_dtype(m.scalar_type());
  return pointwise_into(self, {self, other}, [](const V& v) { return xlogy(v[0], v[1]); });
}
Tensor& xlogy_out(const Tensor& self, const Tensor& other, Tensor& out) {
  check_operands("xlogy", {self, other, out});
  Tensor mo = to_meta(out);
  at::meta::xlogy_outf(to_meta(self), to_meta(other), mo);
  check_xlogy_dtype(mo.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {self, other}, [](const V& v) { return xlogy(v[0], v[1]); });
}

// --- embedding_dense_backward: grad_weight[k] = sum of grad rows i with indices[i] == k,
// each scaled by 1 / count(k) with scale_grad_by_freq; the padding_idx row stays zero ---

Tensor& embedding_dense_backward_out(const Tensor& grad, const Tensor& indices,
                                     c10::SymInt num_weights_sym,
                                     EmbeddingPaddingIdx padding_idx_sym,
                                     bool scale_grad_by_freq, Tensor& out) {
  check_operands("embedding_dense_backward", {grad, indices, out});
  at::checkScalarTypes("embedding_backward", at::TensorArg(indices, "indices", 2),
                       {at::kLong, at::kInt});
  const int64_t num_weights = num_weights_sym.expect_int();
  const int64_t padding_idx = concrete(padding_idx_sym);
  const int64_t n = indices.numel(), d = grad.size(-1);
  TORCH_CHECK(grad.numel() == n * d, "embedding_backward: grad of shape ", grad.sizes(),
              " does not match indices of shape ", indices.sizes());
  check_out_dtype(out, grad);
  at::native::resize_output(out, {num_weights, d});
  EngineLock g(engine_mutex());
  const DType t = to_loom(grad.scalar_type());
  assign(out, constant(loom::Scalar::of_int(0), t, shape_of(out.sizes())));
  if (n == 0 || d == 0) return out;
  const std::string msg =
      "index {} is out of bounds for dimension 0 with size " + std::to_string(num_weights);
  Tensor idx = indices.reshape({n});
  NodeRef k = checked_now(idx, index_value(idx, {n}), num_weights, false, true, msg);  // {n}
  Shape rows{n, d};
  IndexMap by_row{{0}, {0, -1}, {1, 0}};
  NodeRef value = read_tensor(grad.reshape({n, d}));
  if (scale_grad_by_freq) {
    // count(k) by a scatter-add of ones into a fresh counter; 1 / count computed in double,
    // as CPU's scale.
    Tensor counts = empty_loom({num_weights}, at::kLong);
    assign(counts, int_const(0, {num_weights}));
    scatter(buffer_of(counts), DType::Int64, k, int_const(1, {n}), ReduceKind::Sum);
    NodeRef c = gather(buffer_of(counts), DType::Int64, k);
    NodeRef scale = cast(1.0 / cast(c, DType::Float64), t);
    value = value * reindex(scale, rows, by_row);
  }
  NodeRef pad = binary(Op::Eq, reindex(k, rows, by_row), int_const(padding_idx, rows));
  value = where(pad, constant(loom::Scalar::of_int(0), t, rows), value);
  NodeRef at = storage_index(out, {reindex(k, rows, by_row), iota(DType::Int64, rows, 1)});
  scatter(buffer_of(out), t, at, value, ReduceKind::Sum);
  return out;
}
Tensor embedding_dense_backward_fn(const Tensor& grad, const Tensor& indices,
                                   c10::SymInt num_weights, EmbeddingPaddingIdx padding_idx,
                                   bool scale_grad_by_freq) {
  Tensor out = empty_loom({0}, grad.scalar_type());
  return embedding_dense_backward_out(grad, indices, num_weights, padding_idx, scale_grad_by_freq,
                                      out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss", TORCH_FN(mse_loss_fn));
  m.impl("mse_loss.out", TORCH_FN(mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward_fn));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1_loss_fn));
  m.impl("smooth_l1_loss.out", TORCH_FN(smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward_fn));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_loss_backward_out));
  m.impl("huber_loss", TORCH_FN(huber_loss_fn));
  m.impl("huber_loss.out", TORCH_FN(huber_loss_out));
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward_fn));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_loss_backward_out));
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_fn));
  m.impl("binary_cross_entropy.out", TORCH_FN(binary_cross_entropy_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(binary_cross_entropy_backward_fn));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(binary_cross_entropy_backward_out));
  m.impl("xlogy.Tensor", TORCH_FN(xlogy_fn));
  m.impl("xlogy_.Tensor", TORCH_FN(xlogy_ip));
  m.impl("xlogy.OutTensor", TORCH_FN(xlogy_out));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward_fn));
  m.impl("embedding_dense_backward.out", TORCH_FN(embedding_dense_backward_out));
}

}  // namespace loom::aten
