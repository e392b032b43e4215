// Activations with a second operand taken from the input, a weight or random numbers: glu
// (one half of the input gates the other), prelu (a slope per channel), forward and
// backward, and rrelu (a random slope per element in training; its backward is composite).
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/pointwise.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using V = std::vector<NodeRef>;
using namespace expr;

NodeRef sigmoid(const NodeRef& x) { return unary(Op::Sigmoid, x); }

// --- glu: a * sigmoid(b), a and b the two halves of the input along dim ---

Tensor& glu_into(const Tensor& self, int64_t dim, Tensor& out) {
  check_operands("glu", {self, out});
  Tensor ms = to_meta(self), mo = to_meta_out(out, self, ms);
  at::meta::glu_outf(ms, dim, mo);
  static const CpuVerdicts verdicts;  // 2.x's CPU takes float16 too
  verdicts.check(mo.scalar_type(), [&] { at::glu(probe_operand(mo.scalar_type(), {2}), 0); });
  match_out(out, mo);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  const int64_t h = self.size(dim) / 2;
  return pointwise_into(out, {self.narrow(dim, 0, h), self.narrow(dim, h, h)},
                        [](const V& v) { return v[0] * sigmoid(v[1]); });
}
Tensor glu_fn(const Tensor& self, int64_t dim) {
  check_operands("glu", {self});
  Tensor out = locked_result(at::meta::glu(to_meta(self), dim));
  return glu_into(self, dim, out);
}

// d/da = g sigmoid(b); d/db = (1 - sigmoid(b)) sigmoid(b) a g, as the CPU orders it.
Tensor& glu_backward_into(const Tensor& grad, const Tensor& self, int64_t dim, Tensor& gi) {
  check_operands("glu_backward", {grad, self, gi});
  TORCH_CHECK(self.dim() > 0, "glu does not support 0-dimensional tensors");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", dim, " is size ", n);
  static const CpuVerdicts verdicts;
  verdicts.check(self.scalar_type(), [&] {
    const Tensor p = probe_operand(self.scalar_type(), {2});
    at::glu_backward(at::ones({1}, p.options()), p, 0);
  });
  at::native::resize_output(gi, self.sizes());
  const int64_t h = n / 2;
  Tensor a = self.narrow(dim, 0, h), b = self.narrow(dim, h, h);
  Tensor ga = gi.narrow(dim, 0, h), gb = gi.narrow(dim, h, h);
  pointwise_into(gb, {a, b, grad}, [](const V& v) {
    NodeRef s = sigmoid(v[1]);
    return (1.0 - s) * s * v[0] * v[2];
  });
  pointwise_into(ga, {b, grad}, [](const V& v) { return sigmoid(v[0]) * v[1]; });
  return gi;
}
Tensor glu_backward_fn(const Tensor& grad, const Tensor& self, int64_t dim) {
  Tensor gi = empty_loom({0}, self.scalar_type());
  return glu_backward_into(grad, self, dim, gi);
}

// --- prelu: x where x > 0, else weight * x, with one weight or one per channel (dim 1) ---

// The weight laid along the input's channel dim (or as a scalar), checked as the CPU does.
Tensor channel_weight(const Tensor& self, const Tensor& weight) {
  const int64_t n = weight.numel();
  if (n != 1) {
    TORCH_CHECK(self.dim() > 0, "Not allow zero-dim input tensor.");
    const int64_t channels = self.dim() > 1 ? self.size(1) : 1;
    TORCH_CHECK(channels == n,
                "Mismatch of parameter numbers and input channel size. Found "
                "parameter numbers = ",
                n, " and channel size = ", channels, ".");
  }
  TORCH_CHECK(
      weight.dim() <= 1,
      "prelu: Expected `weight` to be a scalar or 1D tensor, but got ndim = ", weight.dim());
  std::vector<int64_t> sizes(size_t(self.dim()), 1);
  if (self.dim() >= 2) sizes[1] = weight.numel();
  return weight.reshape(sizes);
}

Tensor prelu_fn(const Tensor& self, const Tensor& weight) {
  check_operands("prelu", {self, weight});
  Tensor w = channel_weight(self, weight);
  check_kernel_dtype("prelu_cpu", self.scalar_type(), kFloat);
  Tensor meta = at::empty_like(to_meta(self), self.suggest_memory_format());
  return pointwise_result(meta, {self, w},
                          [](const V& v) { return select(gt(v[0], 0.0), v[0], v[1] * v[0]); });
}

// (grad_input, grad_weight): grad_weight sums x * g where x <= 0, per channel.
std::tuple<Tensor, Tensor> prelu_backward_fn(const Tensor& grad, const Tensor& self,
                                             const Tensor& weight) {
  check_operands("prelu_backward", {grad, self, weight});
  Tensor w = channel_weight(self, weight);
  check_kernel_dtype("prelu_backward_cpu", self.scalar_type(), kFloat);
  Tensor meta = at::empty_like(to_meta(self), self.suggest_memory_format());
  Tensor gi = pointwise_result(meta, {self, w, grad},
                               [](const V& v) { return select(gt(v[0], 0.0), v[2], v[1] * v[2]); });
  Tensor term = at::where(self > 0, at::zeros({}, self.options()), self * grad);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != 1 || weight.numel() == 1) dims.push_back(d);
  Tensor gw = dims.empty() ? term : term.sum(dims);
  return {gi, gw.reshape(weight.sizes()).to(weight.scalar_type())};
}

// torch 2.x's prelu is composite over _prelu_kernel (the weight already reshaped to
// broadcast along the channel dim) and _prelu_kernel_backward: elementwise TensorIterators
// over (self, weight) and (self, weight, grad), whose layouts mul's and addcmul's meta
// functions give. The composite sums grad_weight itself. Neither op is in 1.13's headers:
// the dtype verdict calls the CPU kernel through the dispatcher (aten_op).

Tensor prelu_kernel_fn(const Tensor& self, const Tensor& weight) {
  check_operands("_prelu_kernel", {self, weight});
  Tensor meta = at::meta::mul(to_meta(self), to_meta(weight));
  auto cpu_call = [&] {
    static auto op = aten_op<Tensor(const Tensor&, const Tensor&)>("aten::_prelu_kernel");
    op.call(probe_operand(self.scalar_type()), probe_operand(weight.scalar_type()));
  };
  LOOM_CPU_VERDICT(self.scalar_type(), weight.scalar_type(), cpu_call());
  return pointwise_result(meta, {self, weight},
                          [](const V& v) { return select(gt(v[0], 0.0), v[0], v[1] * v[0]); });
}

std::tuple<Tensor, Tensor> prelu_kernel_backward_fn(const Tensor& grad, const Tensor& self,
                                                    const Tensor& weight) {
  check_operands("_prelu_kernel_backward", {grad, self, weight});
  Tensor meta = at::meta::addcmul(to_meta(self), to_meta(weight), to_meta(grad));
  auto cpu_call = [&] {
    using Sig = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&);
    static auto op = aten_op<Sig>("aten::_prelu_kernel_backward");
    op.call(probe_operand(grad.scalar_type()), probe_operand(self.scalar_type()),
            probe_operand(weight.scalar_type()));
  };
  LOOM_CPU_VERDICT(self.scalar_type(), weight.scalar_type(), cpu_call());
  EngineLock g(engine_mutex());
  Tensor gi = result_like(meta);
  Tensor gw = empty_loom(meta.sizes(), meta.strides(), weight.scalar_type());
  store_pointwise(gi, {self, weight, grad},
                  [](const V& v) { return select(gt(v[0], 0.0), v[2], v[1] * v[2]); });
  store_pointwise(gw, {self, grad},
                  [](const V& v) { return select(gt(v[0], 0.0), 0.0, v[0] * v[1]); });
  return {gi, gw};
}

}  // namespace

// --- rrelu_with_noise: in training, each element <= 0 times a slope drawn uniformly from
// [lower, upper] (in double, then rounded to the input's dtype, as on the CPU), which
// `noise` records (1 for the others); in evaluation, leaky_relu with the mean slope ---

Tensor& rrelu_with_noise_out(const Tensor& self, RreluNoise noise, const c10::Scalar& lower,
                             const c10::Scalar& upper, bool training,
                             c10::optional<at::Generator> gen, Tensor& out) {
  check_operands("rrelu_with_noise", {self, noise, out});
  if (!training) {
    const double slope = (lower.to<double>() + upper.to<double>()) / 2;
    return at::leaky_relu_out(out, self, slope);
  }
  const c10::ScalarType st = self.scalar_type();
  TORCH_CHECK(st == at::kFloat || st == at::kDouble || st == at::kBFloat16,
              "\"rrelu_with_noise_out_cpu\" not implemented for '", c10::toString(st), "'");
  TORCH_CHECK(noise.numel() == self.numel() && noise.is_contiguous() && noise.scalar_type() == st,
              "rrelu_with_noise: noise must be a contiguous tensor of the input's size and dtype");
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  Tensor r = at::empty(self.sizes(), self.options().dtype(at::kDouble))
                 .uniform_(lower.to<double>(), upper.to<double>(), gen)
                 .to(st);
  Tensor negative = self <= 0;
  Tensor value = at::where(negative, self * r, self);
  noise.view(self.sizes()).copy_(at::where(negative, r, at::ones_like(r)));
  out.copy_(value);
  return out;
}
Tensor rrelu_with_noise_fn(const Tensor& self, RreluNoise noise, const c10::Scalar& lower,
                           const c10::Scalar& upper, bool training,
                           c10::optional<at::Generator> gen) {
  Tensor out = empty_loom(self.sizes(), self.scalar_type());
  return rrelu_with_noise_out(self, noise, lower, upper, training, gen, out);
}
Tensor& rrelu_with_noise_ip(Tensor& self, RreluNoise noise, const c10::Scalar& lower,
                            const c10::Scalar& upper, bool training,
                            c10::optional<at::Generator> gen) {
  return rrelu_with_noise_out(self, noise, lower, upper, training, gen, self);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("rrelu_with_noise", rrelu_with_noise_fn);
  m.impl("rrelu_with_noise_", rrelu_with_noise_ip);
  m.impl("rrelu_with_noise.out", rrelu_with_noise_out);
  m.impl("glu", glu_fn);
  m.impl("glu.out", glu_into);
  m.impl("glu_backward", glu_backward_fn);
  m.impl("glu_backward.grad_input", glu_backward_into);
  if (!composite_in_this_release("prelu")) m.impl("prelu", prelu_fn);
  m.impl("prelu_backward", prelu_backward_fn);
  if (composite_in_this_release("prelu")) {
    m.impl("_prelu_kernel", prelu_kernel_fn);
    m.impl("_prelu_kernel_backward", prelu_kernel_backward_fn);
  }
}

}  // namespace loom::aten
