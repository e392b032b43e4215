// Layer norm and GELU forward, built from reductions and elementwise nodes so that they
// run on Loom and fuse with their neighbours. Their backward still falls back to the CPU.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

NodeRef scalar_like(double v, const NodeRef& like) {
  return constant(Scalar::of_float(v), like->dtype, like->shape);
}

DType compute_dtype(const Tensor& t) {
  DType d = to_loom(t.scalar_type());
  return is_reduced_float(d) ? DType::Float32 : d;
}

// Two passes, as the CPU: the mean, then the mean of squared deviations (biased).
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_fn(const Tensor& input,
                                                        at::IntArrayRef normalized_shape,
                                                        const c10::optional<Tensor>& weight,
                                                        const c10::optional<Tensor>& bias,
                                                        double eps) {
  auto meta =
      at::native_layer_norm(to_meta(input), normalized_shape, to_meta(weight), to_meta(bias), eps);
  check_operands("native_layer_norm", {input, weight.value_or(Tensor()), bias.value_or(Tensor())});
  // The statistics as the CPU has them: the input's dtype, size 1 over the normalized dims
  // (the meta kernel differs for empty and reduced-float inputs).
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().end());
  for (size_t i = stat_shape.size() - normalized_shape.size(); i < stat_shape.size(); ++i)
    stat_shape[i] = 1;
  Tensor stat_meta = at::empty(stat_shape, input.options().device(at::kMeta));
  EngineLock g(engine_mutex());
  Tensor out = result_like(std::get<0>(meta));
  Tensor mean = result_like(stat_meta);
  Tensor rstd = result_like(stat_meta);
  Shape s = shape_of(input.sizes());
  std::vector<int> axes;
  int64_t n = 1;
  for (int d = int(input.dim() - normalized_shape.size()); d < input.dim(); ++d) {
    axes.push_back(d);
    n *= s[d];
  }
  DType acc = compute_dtype(input);
  NodeRef x = cast(read_tensor(input), acc);
  NodeRef m = reduce(ReduceKind::Sum, x, axes, acc);
  m = binary(Op::Div, m, scalar_like(double(n), m));
  NodeRef dev = binary(Op::Sub, x, expand(m, s));
  NodeRef var = reduce(ReduceKind::Sum, binary(Op::Mul, dev, dev), axes, acc);
  var = binary(Op::Div, var, scalar_like(double(n), var));
  NodeRef r = unary(Op::Rsqrt, binary(Op::Add, var, scalar_like(eps, var)));
  NodeRef y = binary(Op::Mul, dev, expand(r, s));
  if (weight && weight->defined()) y = binary(Op::Mul, y, operand(*weight, s, acc));
  if (bias && bias->defined()) y = binary(Op::Add, y, operand(*bias, s, acc));
  assign(out, y);
  assign(mean, m);
  assign(rstd, r);
  return {out, mean, rstd};
}

// The CPU's formulas, in float for reduced floats:
//   none: x * 0.5 * (1 + erf(x / sqrt(2)));  tanh: 0.5 * x * (1 + tanh(b * (x + k * x^3))).
NodeRef gelu_value(const Tensor& self, c10::string_view approximate) {
  DType acc = compute_dtype(self);
  NodeRef x = cast(read_tensor(self), acc);
  auto c = [&](double v) { return scalar_like(v, x); };
  NodeRef one_plus;
  if (approximate == "tanh") {
    NodeRef cube = binary(Op::Mul, binary(Op::Mul, x, x), x);
    NodeRef inner = binary(Op::Add, x, binary(Op::Mul, c(0.044715), cube));
    inner = binary(Op::Mul, c(M_SQRT2 * M_2_SQRTPI * 0.5), inner);
    one_plus = binary(Op::Add, c(1), unary(Op::Tanh, inner));
    return binary(Op::Mul, binary(Op::Mul, c(0.5), x), one_plus);
  }
  one_plus = binary(Op::Add, c(1), unary(Op::Erf, binary(Op::Mul, x, c(M_SQRT1_2))));
  return binary(Op::Mul, binary(Op::Mul, x, c(0.5)), one_plus);
}

Tensor gelu_fn(const Tensor& self, c10::string_view approximate) {
  Tensor meta = at::gelu(to_meta(self), approximate);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, gelu_value(self, approximate));
  return out;
}

Tensor& gelu_out(const Tensor& self, c10::string_view approximate, Tensor& out) {
  Tensor r = gelu_fn(self, approximate);
  at::native::resize_output(out, r.sizes());
  EngineLock g(engine_mutex());
  assign(out, read_tensor(r));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", native_layer_norm_fn);
  m.impl("gelu", gelu_fn);
  m.impl("gelu.out", gelu_out);
}

}  // namespace loom::aten
