// Activations and their backward ops, as autograd calls them: each is one pointwise value
// (formulas as CPU's kernels write them), so it fuses with its producer and consumer.
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>

#include "aten/pointwise.h"

namespace loom::aten {

void check_floating(const char* op, c10::ScalarType t) {
  TORCH_CHECK(at::isFloatingType(t), "\"", op, "\" not implemented for '", c10::toString(t), "'");
}

namespace {

using at::Tensor;
using c10::Scalar;
using V = std::vector<NodeRef>;
using namespace expr;

// A Scalar argument in the math dtype, shaped like `like`.
NodeRef arg(const Scalar& s, const NodeRef& like) {
  return scalar_node(s, like->shape, like->dtype);
}

// Sizes an out= argument as the functional result: some out= forms have Python meta
// kernels in 1.13 that reject their own argument names (hardswish.out,
// hardtanh_backward.grad_input), so these do not run the out= form on meta tensors.
void resize_as_meta(Tensor& out, const Tensor& meta) {
  TORCH_CHECK(out.scalar_type() == meta.scalar_type(), "Expected out tensor to have dtype ",
              meta.scalar_type(), ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, meta.sizes());
}

// --- formulas: x is the input, y the output, dy the incoming gradient (math dtype) ---

NodeRef gelu(const NodeRef& x, c10::string_view approximate) {
  if (approximate == "tanh") {
    const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
    NodeRef inner = beta * (x + kappa * (x * x * x));
    return 0.5 * x * (1.0 + tanh(inner));
  }
  return x * normal_cdf(x);
}

NodeRef gelu_backward(const NodeRef& dy, const NodeRef& x, c10::string_view approximate) {
  if (approximate == "tanh") {
    const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
    NodeRef x_sq = x * x;
    NodeRef tanh_inner = tanh(beta * (x + kappa * (x_sq * x)));
    NodeRef left = 0.5 * x, right = 1.0 + tanh_inner;
    NodeRef left_derivative = 0.5 * right;
    NodeRef tanh_derivative = 1.0 - tanh_inner * tanh_inner;
    NodeRef inner_derivative = beta * (1.0 + 3.0 * kappa * x_sq);
    NodeRef right_derivative = left * tanh_derivative * inner_derivative;
    return dy * (left_derivative + right_derivative);
  }
  const double alpha = M_2_SQRTPI * M_SQRT1_2 * 0.5;
  NodeRef cdf = normal_cdf(x);
  NodeRef pdf = alpha * exp(x * x * -0.5);
  return dy * (cdf + x * pdf);
}

NodeRef sigmoid(const NodeRef& x) { return 1.0 / (1.0 + exp(-x)); }
NodeRef silu(const NodeRef& x) { return x / (1.0 + exp(-x)); }
NodeRef silu_backward(const NodeRef& dy, const NodeRef& x) {
  NodeRef s = sigmoid(x);
  return dy * s * (1.0 + x * (1.0 - s));
}

NodeRef mish(const NodeRef& x) { return x * tanh(log1p(exp(x))); }

NodeRef softplus(const NodeRef& x, const Scalar& beta, const Scalar& threshold) {
  NodeRef xb = x * arg(beta, x);
  return select(gt(xb, arg(threshold, x)), x, log1p(exp(xb)) / arg(beta, x));
}
NodeRef softplus_backward(const NodeRef& dy, const NodeRef& x, const Scalar& beta,
                          const Scalar& threshold) {
  NodeRef xb = x * arg(beta, x), z = exp(xb);
  return select(gt(xb, arg(threshold, x)), dy, dy * z / (z + 1.0));
}

NodeRef elu(const NodeRef& x, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  NodeRef negcoef = arg(alpha, x) * arg(scale, x);
  NodeRef neg = (exp(x * arg(input_scale, x)) - 1.0) * negcoef;
  return select(le(x, 0.0), neg, x * arg(scale, x));
}
// `b` is the input, or the output when is_result.
NodeRef elu_backward(const NodeRef& dy, const NodeRef& b, const Scalar& alpha, const Scalar& scale,
                     const Scalar& input_scale, bool is_result) {
  NodeRef negcoef = arg(alpha, b) * arg(scale, b), negiptcoef = arg(input_scale, b);
  NodeRef neg =
      is_result ? dy * negiptcoef * (b + negcoef) : dy * negiptcoef * negcoef * exp(b * negiptcoef);
  return select(le(b, 0.0), neg, dy * arg(scale, b));
}

NodeRef hardswish(const NodeRef& x) { return x * min(max(x + 3.0, 0.0), 6.0) / 6.0; }
// As CPU's scalar formula and CUDA's: x == 3 takes the inner branch (1.5 dy). The CPU's
// vectorized body takes the outer one there (dy), so the CPU's gradient at 3 depends on
// the element's place in the tensor. NaN passes dy through.
NodeRef hardswish_backward(const NodeRef& dy, const NodeRef& x) {
  NodeRef mid = select(le(x, 3.0), dy * (x / 3.0 + 0.5), dy);
  return select(lt(x, -3.0), 0.0, mid);
}

NodeRef hardsigmoid(const NodeRef& x) { return min(max(x + 3.0, 0.0), 6.0) / 6.0; }
NodeRef hardsigmoid_backward(const NodeRef& dy, const NodeRef& x) {
  // CPU multiplies by 1/6 rounded to float, in every dtype.
  return select(both(gt(x, -3.0), lt(x, 3.0)), dy * double(1.0f / 6.0f), 0.0);
}

// --- gelu ---

void check_approximate(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
}

Tensor gelu_fn(const Tensor& self, c10::string_view approximate) {
  check_approximate(approximate);
  Tensor meta = at::meta::gelu(to_meta(self), approximate);
  check_floating("gelu", self.scalar_type());
  return pointwise_result(meta, {self}, [&](const V& v) { return gelu(v[0], approximate); });
}
Tensor& gelu_ip(Tensor& self, c10::string_view approximate) {
  check_approximate(approximate);
  Tensor m = to_meta(self);
  at::meta::gelu_(m, approximate);
  check_floating("gelu", self.scalar_type());
  return pointwise_into(self, {self}, [&](const V& v) { return gelu(v[0], approximate); });
}
Tensor& gelu_out(const Tensor& self, c10::string_view approximate, Tensor& out) {
  check_approximate(approximate);
  Tensor mo = to_meta(out);
  at::meta::gelu_outf(to_meta(self), approximate, mo);
  check_floating("gelu", self.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {self}, [&](const V& v) { return gelu(v[0], approximate); });
}
Tensor gelu_backward_fn(const Tensor& dy, const Tensor& self, c10::string_view approximate) {
  check_approximate(approximate);
  Tensor meta = at::meta::gelu_backward(to_meta(dy), to_meta(self), approximate);
  check_floating("gelu_backward", meta.scalar_type());
  return pointwise_result(meta, {dy, self},
                          [&](const V& v) { return gelu_backward(v[0], v[1], approximate); });
}
Tensor& gelu_backward_out(const Tensor& dy, const Tensor& self, c10::string_view approximate,
                          Tensor& out) {
  check_approximate(approximate);
  Tensor mo = to_meta(out);
  at::meta::gelu_backward_outf(to_meta(dy), to_meta(self), approximate, mo);
  check_floating("gelu_backward", out.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {dy, self},
                        [&](const V& v) { return gelu_backward(v[0], v[1], approximate); });
}

// --- activations without arguments: silu, mish, hardswish, hardsigmoid ---

// The meta functions of these activations (NOTE [C++ meta functions]); hardswish has no
// structured kernel: its meta calls go through the dispatcher.
namespace activation_meta {
using namespace at::meta;
inline Tensor hardswish(const Tensor& a) { return at::hardswish(a); }
inline Tensor& hardswish_(Tensor& a) { return at::hardswish_(a); }
inline Tensor hardswish_backward(const Tensor& dy, const Tensor& a) {
  return at::hardswish_backward(dy, a);
}
}  // namespace activation_meta

#define LOOM_ACTIVATION(name)                                                     \
  Tensor name##_fn(const Tensor& self) {                                          \
    Tensor meta = activation_meta::name(to_meta(self));                           \
    check_floating(#name, self.scalar_type());                                    \
    return pointwise_result(meta, {self}, [](const V& v) { return name(v[0]); }); \
  }                                                                               \
  Tensor& name##_ip(Tensor& self) {                                               \
    Tensor m = to_meta(self);                                                     \
    activation_meta::name##_(m);                                                  \
    check_floating(#name, self.scalar_type());                                    \
    return pointwise_into(self, {self}, [](const V& v) { return name(v[0]); });   \
  }                                                                               \
  Tensor& name##_out(const Tensor& self, Tensor& out) {                           \
    Tensor meta = activation_meta::name(to_meta(self));                           \
    check_floating(#name, self.scalar_type());                                    \
    resize_as_meta(out, meta);                                                    \
    return pointwise_into(out, {self}, [](const V& v) { return name(v[0]); });    \
  }

// silu_backward and mish_backward are CompositeImplicitAutograd: a Loom kernel would hide
// the composite from autograd (double backward), so only silu's out= form is Loom's.
#define LOOM_ACTIVATION_BACKWARD(name)                                               \
  Tensor name##_backward_fn(const Tensor& dy, const Tensor& self) {                  \
    Tensor meta = activation_meta::name##_backward(to_meta(dy), to_meta(self));      \
    check_floating(#name "_backward", meta.scalar_type());                           \
    return pointwise_result(meta, {dy, self},                                        \
                            [](const V& v) { return name##_backward(v[0], v[1]); }); \
  }

#define LOOM_ACTIVATION_BACKWARD_OUT(name)                                         \
  Tensor& name##_backward_out(const Tensor& dy, const Tensor& self, Tensor& out) { \
    Tensor meta = activation_meta::name##_backward(to_meta(dy), to_meta(self));    \
    check_floating(#name "_backward", meta.scalar_type());                         \
    resize_as_meta(out, meta);                                                     \
    return pointwise_into(out, {dy, self},                                         \
                          [](const V& v) { return name##_backward(v[0], v[1]); }); \
  }

LOOM_ACTIVATION(silu)
LOOM_ACTIVATION(mish)
LOOM_ACTIVATION(hardswish)
LOOM_ACTIVATION(hardsigmoid)
LOOM_ACTIVATION_BACKWARD(hardswish)
LOOM_ACTIVATION_BACKWARD(hardsigmoid)
LOOM_ACTIVATION_BACKWARD_OUT(silu)
LOOM_ACTIVATION_BACKWARD_OUT(hardswish)
LOOM_ACTIVATION_BACKWARD_OUT(hardsigmoid)

// --- sigmoid_backward and tanh_backward take the forward's output ---

NodeRef sigmoid_backward(const NodeRef& dy, const NodeRef& y) { return dy * (1.0 - y) * y; }
NodeRef tanh_backward(const NodeRef& dy, const NodeRef& y) { return dy * (1.0 - y * y); }

#define LOOM_OUTPUT_BACKWARD(name)                                                               \
  Tensor name##_backward_fn(const Tensor& dy, const Tensor& y) {                                 \
    Tensor meta = at::meta::name##_backward(to_meta(dy), to_meta(y));                            \
    check_floating(#name "_backward", meta.scalar_type());                                       \
    return pointwise_result(meta, {dy, y},                                                       \
                            [](const V& v) { return name##_backward(v[0], v[1]); });             \
  }                                                                                              \
  Tensor& name##_backward_out(const Tensor& dy, const Tensor& y, Tensor& out) {                  \
    Tensor mo = to_meta(out);                                                                    \
    at::meta::name##_backward_outf(to_meta(dy), to_meta(y), mo);                                 \
    check_floating(#name "_backward", out.scalar_type());                                        \
    match_out(out, mo);                                                                          \
    return pointwise_into(out, {dy, y}, [](const V& v) { return name##_backward(v[0], v[1]); }); \
  }

LOOM_OUTPUT_BACKWARD(sigmoid)
LOOM_OUTPUT_BACKWARD(tanh)

// --- leaky_relu ---

NodeRef leaky_relu(const NodeRef& x, const Scalar& slope) {
  return select(gt(x, 0.0), x, x * arg(slope, x));
}
NodeRef leaky_relu_backward(const NodeRef& dy, const NodeRef& x, const Scalar& slope) {
  return select(gt(x, 0.0), dy, dy * arg(slope, x));
}

Tensor leaky_relu_fn(const Tensor& self, const Scalar& slope) {
  Tensor meta = at::meta::leaky_relu(to_meta(self), slope);
  check_floating("leaky_relu", self.scalar_type());
  return pointwise_result(meta, {self}, [&](const V& v) { return leaky_relu(v[0], slope); });
}
Tensor& leaky_relu_ip(Tensor& self, const Scalar& slope) {
  Tensor m = to_meta(self);
  at::meta::leaky_relu_(m, slope);
  check_floating("leaky_relu", self.scalar_type());
  return pointwise_into(self, {self}, [&](const V& v) { return leaky_relu(v[0], slope); });
}
Tensor& leaky_relu_out(const Tensor& self, const Scalar& slope, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::leaky_relu_outf(to_meta(self), slope, mo);
  check_floating("leaky_relu", self.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {self}, [&](const V& v) { return leaky_relu(v[0], slope); });
}
// With self_is_result, self is the output; its sign is the input's for a positive slope
// (the meta call rejects the others).
Tensor leaky_relu_backward_fn(const Tensor& dy, const Tensor& self, const Scalar& slope,
                              bool self_is_result) {
  Tensor meta = at::meta::leaky_relu_backward(to_meta(dy), to_meta(self), slope, self_is_result);
  check_floating("leaky_relu_backward", meta.scalar_type());
  return pointwise_result(meta, {dy, self},
                          [&](const V& v) { return leaky_relu_backward(v[0], v[1], slope); });
}
Tensor& leaky_relu_backward_out(const Tensor& dy, const Tensor& self, const Scalar& slope,
                                bool self_is_result, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::leaky_relu_backward_outf(to_meta(dy), to_meta(self), slope, self_is_result, mo);
  check_floating("leaky_relu_backward", out.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {dy, self},
                        [&](const V& v) { return leaky_relu_backward(v[0], v[1], slope); });
}

// --- elu (selu and celu are elu with other constants) ---

Tensor elu_fn(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& iscale) {
  Tensor meta = at::meta::elu(to_meta(self), alpha, scale, iscale);
  check_floating("elu", self.scalar_type());
  return pointwise_result(meta, {self},
                          [&](const V& v) { return elu(v[0], alpha, scale, iscale); });
}
Tensor& elu_ip(Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& iscale) {
  Tensor m = to_meta(self);
  at::meta::elu_(m, alpha, scale, iscale);
  check_floating("elu", self.scalar_type());
  return pointwise_into(self, {self}, [&](const V& v) { return elu(v[0], alpha, scale, iscale); });
}
Tensor& elu_out(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& iscale,
                Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::elu_outf(to_meta(self), alpha, scale, iscale, mo);
  check_floating("elu", self.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {self}, [&](const V& v) { return elu(v[0], alpha, scale, iscale); });
}
Tensor elu_backward_fn(const Tensor& dy, const Scalar& alpha, const Scalar& scale,
                       const Scalar& iscale, bool is_result, const Tensor& b) {
  Tensor meta = at::meta::elu_backward(to_meta(dy), alpha, scale, iscale, is_result, to_meta(b));
  check_floating("elu_backward", meta.scalar_type());
  return pointwise_result(meta, {dy, b}, [&](const V& v) {
    return elu_backward(v[0], v[1], alpha, scale, iscale, is_result);
  });
}
Tensor& elu_backward_out(const Tensor& dy, const Scalar& alpha, const Scalar& scale,
                         const Scalar& iscale, bool is_result, const Tensor& b, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::elu_backward_outf(to_meta(dy), alpha, scale, iscale, is_result, to_meta(b), mo);
  check_floating("elu_backward", out.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {dy, b}, [&](const V& v) {
    return elu_backward(v[0], v[1], alpha, scale, iscale, is_result);
  });
}

// --- softplus ---

Tensor softplus_fn(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  Tensor meta = at::meta::softplus(to_meta(self), beta, threshold);
  check_floating("softplus", self.scalar_type());
  return pointwise_result(meta, {self},
                          [&](const V& v) { return softplus(v[0], beta, threshold); });
}
Tensor& softplus_out(const Tensor& self, const Scalar& beta, const Scalar& threshold, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::softplus_outf(to_meta(self), beta, threshold, mo);
  check_floating("softplus", self.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {self}, [&](const V& v) { return softplus(v[0], beta, threshold); });
}
Tensor softplus_backward_fn(const Tensor& dy, const Tensor& self, const Scalar& beta,
                            const Scalar& threshold) {
  Tensor meta = at::meta::softplus_backward(to_meta(dy), to_meta(self), beta, threshold);
  check_floating("softplus_backward", meta.scalar_type());
  return pointwise_result(
      meta, {dy, self}, [&](const V& v) { return softplus_backward(v[0], v[1], beta, threshold); });
}
Tensor& softplus_backward_out(const Tensor& dy, const Tensor& self, const Scalar& beta,
                              const Scalar& threshold, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::softplus_backward_outf(to_meta(dy), to_meta(self), beta, threshold, mo);
  check_floating("softplus_backward", out.scalar_type());
  match_out(out, mo);
  return pointwise_into(out, {dy, self},
                        [&](const V& v) { return softplus_backward(v[0], v[1], beta, threshold); });
}

// --- hardtanh: CPU's clamp, with its integer and Bool rules (relu6 is hardtanh(0, 6)) ---

// The limits as CPU's hardtanh_out converts them.
std::pair<Scalar, Scalar> hardtanh_limits(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  if (!at::isIntegralType(self.scalar_type(), false)) return {lo, hi};
  int64_t l = lo.toLong(), h = hi.toLong();
  TORCH_CHECK(self.scalar_type() != at::kByte || (l >= 0 && h >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  return {Scalar(l), Scalar(h)};
}

NodeRef hardtanh(const NodeRef& x, const Scalar& lo, const Scalar& hi) {
  return min(max(x, arg(lo, x)), arg(hi, x));
}

Tensor hardtanh_fn(const Tensor& self, const Scalar& lo, const Scalar& hi) {
  auto [l, h] = hardtanh_limits(self, lo, hi);
  Tensor meta = at::empty_like(to_meta(self));
  return pointwise_result(meta, {self}, [&](const V& v) { return hardtanh(v[0], l, h); });
}
Tensor& hardtanh_ip(Tensor& self, const Scalar& lo, const Scalar& hi) {
  auto [l, h] = hardtanh_limits(self, lo, hi);
  at::assert_no_internal_overlap(self);
  return pointwise_into(self, {self}, [&](const V& v) { return hardtanh(v[0], l, h); });
}
Tensor& hardtanh_out(const Tensor& self, const Scalar& lo, const Scalar& hi, Tensor& out) {
  auto [l, h] = hardtanh_limits(self, lo, hi);
  Tensor mo = to_meta(out);
  at::meta::clamp_outf(to_meta(self), l, h, mo);
  match_out(out, mo);
  return pointwise_into(out, {self}, [&](const V& v) { return hardtanh(v[0], l, h); });
}

NodeRef hardtanh_backward(const NodeRef& dy, const NodeRef& x, const Scalar& lo, const Scalar& hi) {
  return select(either(le(x, arg(lo, x)), ge(x, arg(hi, x))), 0.0, dy);
}
// The CPU's hardtanh_backward is a binary TensorIterator over (dy, self): mul's meta
// function gives its layout and dtype. PyTorch's own meta hardtanh_backward is Python:
// 174 us a call.
Tensor hardtanh_backward_meta(const Tensor& dy, const Tensor& self) {
  return at::meta::mul(to_meta(dy), to_meta(self));
}
Tensor hardtanh_backward_fn(const Tensor& dy, const Tensor& self, const Scalar& lo,
                            const Scalar& hi) {
  Tensor meta = hardtanh_backward_meta(dy, self);
  check_floating("hardtanh_backward", meta.scalar_type());
  return pointwise_result(meta, {dy, self},
                          [&](const V& v) { return hardtanh_backward(v[0], v[1], lo, hi); });
}
Tensor& hardtanh_backward_out(const Tensor& dy, const Tensor& self, const Scalar& lo,
                              const Scalar& hi, Tensor& out) {
  Tensor meta = hardtanh_backward_meta(dy, self);
  check_floating("hardtanh_backward", meta.scalar_type());
  resize_as_meta(out, meta);
  return pointwise_into(out, {dy, self},
                        [&](const V& v) { return hardtanh_backward(v[0], v[1], lo, hi); });
}

// --- log_sigmoid: CPU's forward also returns buffer = exp(-|x|), which its backward reads ---

std::tuple<Tensor&, Tensor&> log_sigmoid_forward_out(const Tensor& self, Tensor& output,
                                                     Tensor& buffer) {
  check_operands("log_sigmoid_forward", {self, output, buffer});
  check_floating("log_sigmoid", self.scalar_type());
  at::native::resize_output(output, self.sizes());
  at::native::resize_output(buffer, self.sizes());
  EngineLock g(engine_mutex());
  store_pointwise(buffer, {self}, [](const V& v) { return exp(-abs(v[0])); });
  store_pointwise(output, {self},
                  [](const V& v) { return min(v[0], 0.0) - log1p(exp(-abs(v[0]))); });
  return {output, buffer};
}
std::tuple<Tensor, Tensor> log_sigmoid_forward_fn(const Tensor& self) {
  check_floating("log_sigmoid", self.scalar_type());
  Tensor output = empty_loom(self.sizes(), self.scalar_type());
  Tensor buffer = empty_loom(self.sizes(), self.scalar_type());
  log_sigmoid_forward_out(self, output, buffer);
  return {output, buffer};
}

// An empty buffer (as CUDA's forward leaves it) is recomputed from self.
NodeRef log_sigmoid_backward(const NodeRef& dy, const NodeRef& x, const NodeRef& b) {
  NodeRef neg = lt(x, 0.0);
  NodeRef max_deriv = select(neg, 1.0, lit(0.0, x));
  NodeRef sign = select(neg, 1.0, lit(-1.0, x));
  return (max_deriv - sign * (b / (1.0 + b))) * dy;
}
Tensor& log_sigmoid_backward_out(const Tensor& dy, const Tensor& self, const Tensor& buffer,
                                 Tensor& out) {
  check_operands("log_sigmoid_backward", {dy, self, buffer, out});
  check_floating("log_sigmoid_backward", dy.scalar_type());
  TORCH_CHECK(self.scalar_type() == dy.scalar_type() && out.scalar_type() == dy.scalar_type(),
              "log_sigmoid_backward: expected tensors of dtype ", dy.scalar_type());
  at::native::resize_output(out, at::infer_size(dy.sizes(), self.sizes()));
  bool use_buffer = buffer.defined() && buffer.numel() == self.numel();
  std::vector<Tensor> in{dy, self};
  if (use_buffer) in.push_back(buffer);
  return pointwise_into(out, in, [&](const V& v) {
    return log_sigmoid_backward(v[0], v[1], use_buffer ? v[2] : exp(-abs(v[1])));
  });
}
Tensor log_sigmoid_backward_fn(const Tensor& dy, const Tensor& self, const Tensor& buffer) {
  Tensor out = result_like(at::empty_like(to_meta(dy)));
  return log_sigmoid_backward_out(dy, self, buffer, out);
}

// --- clamp_min / clamp_max (binary_cross_entropy_with_logits calls clamp_min_) ---

// Computed in the functional result's dtype (`meta`), stored in dst's.
template <Op kOp>
NodeRef clamp_one(const Tensor& self, const Tensor& bound, const Tensor& dst, const Tensor& meta) {
  Shape s = shape_of(dst.sizes());
  DType t = to_loom(meta.scalar_type());
  return binary(kOp, operand(self, s, t), operand(bound, s, t));
}

Tensor wrap(const Scalar& s) {
  Tensor t = at::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

#define LOOM_CLAMP_ONE(name, OP)                                           \
  Tensor name##_t_fn(const Tensor& self, const Tensor& b) {                \
    check_operands(#name, {self, b});                                      \
    Tensor meta = at::meta::name(to_meta(self), to_meta(b));               \
    EngineLock g(engine_mutex());                                          \
    Tensor out = result_like(meta);                                        \
    assign(out, clamp_one<Op::OP>(self, b, out, meta));                    \
    return out;                                                            \
  }                                                                        \
  Tensor& name##_t_ip(Tensor& self, const Tensor& b) {                     \
    check_operands(#name "_", {self, b});                                  \
    Tensor meta = at::meta::name(to_meta(self), to_meta(b));               \
    to_meta(self).name##_(to_meta(b));                                     \
    EngineLock g(engine_mutex());                                          \
    assign(self, clamp_one<Op::OP>(self, b, self, meta));                  \
    return self;                                                           \
  }                                                                        \
  Tensor& name##_t_out(const Tensor& self, const Tensor& b, Tensor& out) { \
    check_operands(#name, {self, b, out});                                 \
    Tensor mo = to_meta(out);                                              \
    at::meta::name##_outf(to_meta(self), to_meta(b), mo);                  \
    match_out(out, mo);                                                    \
    Tensor meta = at::meta::name(to_meta(self), to_meta(b));               \
    EngineLock g(engine_mutex());                                          \
    assign(out, clamp_one<Op::OP>(self, b, out, meta));                    \
    return out;                                                            \
  }                                                                        \
  Tensor name##_s_fn(const Tensor& self, const Scalar& b) {                \
    check_operands(#name, {self});                                         \
    Tensor meta = at::meta::name(to_meta(self), b);                        \
    EngineLock g(engine_mutex());                                          \
    Tensor out = result_like(meta);                                        \
    assign(out, clamp_one<Op::OP>(self, wrap(b), out, meta));              \
    return out;                                                            \
  }                                                                        \
  Tensor& name##_s_ip(Tensor& self, const Scalar& b) {                     \
    check_operands(#name "_", {self});                                     \
    Tensor meta = at::meta::name(to_meta(self), b);                        \
    to_meta(self).name##_(b);                                              \
    EngineLock g(engine_mutex());                                          \
    assign(self, clamp_one<Op::OP>(self, wrap(b), self, meta));            \
    return self;                                                           \
  }                                                                        \
  Tensor& name##_s_out(const Tensor& self, const Scalar& b, Tensor& out) { \
    check_operands(#name, {self, out});                                    \
    Tensor mo = to_meta(out);                                              \
    at::meta::name##_outf(to_meta(self), b, mo);                           \
    match_out(out, mo);                                                    \
    Tensor meta = at::meta::name(to_meta(self), b);                        \
    EngineLock g(engine_mutex());                                          \
    assign(out, clamp_one<Op::OP>(self, wrap(b), out, meta));              \
    return out;                                                            \
  }

LOOM_CLAMP_ONE(clamp_min, Maximum)
LOOM_CLAMP_ONE(clamp_max, Minimum)

// --- _efficientzerotensor: the zero gradient of sgn/sign on real inputs. Loom has no
// ZeroTensor dispatch key; a lazy constant is just as cheap. ---

Tensor efficientzerotensor_fn(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                              c10::optional<at::Layout>, c10::optional<at::Device>,
                              c10::optional<bool>) {
  at::ScalarType t = dtype.value_or(c10::get_default_dtype_as_scalartype());
  EngineLock g(engine_mutex());
  Tensor out = empty_loom(size, t);
  assign(out, constant(loom::Scalar::of_int(0), to_loom(t), shape_of(out.sizes())));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gelu", TORCH_FN(gelu_fn));
  m.impl("gelu_", TORCH_FN(gelu_ip));
  m.impl("gelu.out", TORCH_FN(gelu_out));
  m.impl("gelu_backward", TORCH_FN(gelu_backward_fn));
  m.impl("gelu_backward.grad_input", TORCH_FN(gelu_backward_out));
#define REG_ACTIVATION(name)              \
  m.impl(#name, TORCH_FN(name##_fn));     \
  m.impl(#name "_", TORCH_FN(name##_ip)); \
  m.impl(#name ".out", TORCH_FN(name##_out));
  REG_ACTIVATION(silu)
  REG_ACTIVATION(mish)
  REG_ACTIVATION(hardswish)
  REG_ACTIVATION(hardsigmoid)
  m.impl("hardswish_backward", TORCH_FN(hardswish_backward_fn));
  m.impl("hardsigmoid_backward", TORCH_FN(hardsigmoid_backward_fn));
  m.impl("silu_backward.grad_input", TORCH_FN(silu_backward_out));
  m.impl("hardswish_backward.out", TORCH_FN(hardswish_backward_out));
  m.impl("hardsigmoid_backward.grad_input", TORCH_FN(hardsigmoid_backward_out));
  m.impl("sigmoid_backward", TORCH_FN(sigmoid_backward_fn));
  m.impl("sigmoid_backward.grad_input", TORCH_FN(sigmoid_backward_out));
  m.impl("tanh_backward", TORCH_FN(tanh_backward_fn));
  m.impl("tanh_backward.grad_input", TORCH_FN(tanh_backward_out));
  m.impl("leaky_relu", TORCH_FN(leaky_relu_fn));
  m.impl("leaky_relu_", TORCH_FN(leaky_relu_ip));
  m.impl("leaky_relu.out", TORCH_FN(leaky_relu_out));
  m.impl("leaky_relu_backward", TORCH_FN(leaky_relu_backward_fn));
  m.impl("leaky_relu_backward.grad_input", TORCH_FN(leaky_relu_backward_out));
  m.impl("elu", TORCH_FN(elu_fn));
  m.impl("elu_", TORCH_FN(elu_ip));
  m.impl("elu.out", TORCH_FN(elu_out));
  m.impl("elu_backward", TORCH_FN(elu_backward_fn));
  m.impl("elu_backward.grad_input", TORCH_FN(elu_backward_out));
  m.impl("softplus", TORCH_FN(softplus_fn));
  m.impl("softplus.out", TORCH_FN(softplus_out));
  m.impl("softplus_backward", TORCH_FN(softplus_backward_fn));
  m.impl("softplus_backward.grad_input", TORCH_FN(softplus_backward_out));
  m.impl("hardtanh", TORCH_FN(hardtanh_fn));
  m.impl("hardtanh_", TORCH_FN(hardtanh_ip));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward_fn));
  m.impl("hardtanh_backward.grad_input", TORCH_FN(hardtanh_backward_out));
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward_fn));
  m.impl("log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward_fn));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  m.impl("clamp_min", TORCH_FN(clamp_min_s_fn));
  m.impl("clamp_min_", TORCH_FN(clamp_min_s_ip));
  m.impl("clamp_min.out", TORCH_FN(clamp_min_s_out));
  m.impl("clamp_min.Tensor", TORCH_FN(clamp_min_t_fn));
  m.impl("clamp_min_.Tensor", TORCH_FN(clamp_min_t_ip));
  m.impl("clamp_min.Tensor_out", TORCH_FN(clamp_min_t_out));
  m.impl("clamp_max", TORCH_FN(clamp_max_s_fn));
  m.impl("clamp_max_", TORCH_FN(clamp_max_s_ip));
  m.impl("clamp_max.out", TORCH_FN(clamp_max_s_out));
  m.impl("clamp_max.Tensor", TORCH_FN(clamp_max_t_fn));
  m.impl("clamp_max_.Tensor", TORCH_FN(clamp_max_t_ip));
  m.impl("clamp_max.Tensor_out", TORCH_FN(clamp_max_t_out));
  m.impl("_efficientzerotensor", TORCH_FN(efficientzerotensor_fn));
}

}  // namespace loom::aten
