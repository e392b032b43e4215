// Normalization forward and backward: native_layer_norm and native_batch_norm (group
// norm and instance norm reach them through composites). Statistics are reductions,
// accumulated in float32 for reduced floats; everything else is elementwise, so a
// normalization and its neighbours fuse.
#include <ATen/native/Resize.h>
#include <ATen/native/layer_norm.h>
#include <torch/library.h>

#include "aten/op_util.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using OptTensor = c10::optional<Tensor>;



// The mean over `axes` of v, broadcast back to v's shape.
NodeRef mean_over(const NodeRef& v, const std::vector<int>& axes, int64_t count) {
  NodeRef sum = reduce(ReduceKind::Sum, v, axes, v->dtype);
  return expand(binary(Op::Div, sum, scalar(double(count), v->dtype, sum->shape)), v->shape);
}

// A per-channel (C) value laid along dim 1 of `shape` (batch norm), or the trailing
// normalized dims (layer norm) when `trailing` is set.
NodeRef along(const NodeRef& v, const Shape& shape, int64_t first_dim) {
  IndexMap m;
  m.offs.assign(v->shape.size(), 0);
  for (int64_t j = 0; j < int64_t(shape.size()); ++j) {
    int64_t k = j - first_dim;
    bool in = k >= 0 && k < int64_t(v->shape.size());
    m.dim_of.push_back(in ? int(k) : -1);
    m.mult.push_back(in ? 1 : 0);
  }
  return reindex(v, shape, m);
}

// --- layer norm ---

std::tuple<Tensor, Tensor, Tensor> layer_norm(const Tensor& input, at::IntArrayRef normalized,
                                              const OptTensor& weight, const OptTensor& bias,
                                              double eps) {
  check_operands("native_layer_norm", {input});
  Tensor out, mean, rstd;
  if (at::isFloatingType(input.scalar_type())) {
    // The CPU's checks and layouts (layer_norm_cpu): a contiguous result, and statistics
    // that keep the normalized dims as size 1, in the parameters' dtype: the input's, or
    // float where 2.x takes a reduced-float input with float parameters ("mixed type";
    // which pairs the CPU takes, and its message, come from one CPU call per pair: 1.13
    // refuses them). PyTorch's meta function is the composite run on meta tensors (65 us
    // of host time per call), and 1.13's made the statistics float.
    at::native::_check_layer_norm_inputs(input, normalized, weight.value_or(Tensor()),
                                         bias.value_or(Tensor()));
    const auto t = input.scalar_type();
    const auto pt = has(weight) ? weight->scalar_type() : has(bias) ? bias->scalar_type() : t;
    if (pt != t || (has(weight) && has(bias) && bias->scalar_type() != pt)) {
      auto probe = [&](bool defined, c10::ScalarType dtype) {
        return defined ? at::ones({1}, at::TensorOptions().dtype(dtype)) : Tensor();
      };
      auto cpu_call = [&] {
        at::native_layer_norm(probe(true, t), {1}, probe(has(weight), pt),
                              probe(has(bias), has(bias) ? bias->scalar_type() : pt), eps);
      };
      if (has(weight) && has(bias) && bias->scalar_type() != pt) cpu_call();
      LOOM_CPU_VERDICT(t, pt, cpu_call());
    }
    at::DimVector stat(input.sizes().begin(), input.sizes().end());
    for (size_t i = 0; i < normalized.size(); ++i) stat[stat.size() - 1 - i] = 1;
    const auto st = pt;
    EngineLock g(engine_mutex());
    out = empty_loom(input.sizes(), input.scalar_type(), at::MemoryFormat::Contiguous);
    mean = empty_loom(stat, st, at::MemoryFormat::Contiguous);
    rstd = empty_loom(stat, st, at::MemoryFormat::Contiguous);
  } else {
    auto meta = at::native_layer_norm(to_meta(input), normalized, to_meta(weight), to_meta(bias), eps);
    out = result_like(std::get<0>(meta));
    mean = result_like(std::get<1>(meta));
    rstd = result_like(std::get<2>(meta));
  }
  if (input.numel() == 0) return {out, mean, rstd};
  const int64_t axis = input.dim() - int64_t(normalized.size());
  std::vector<int> axes;
  int64_t count = 1;
  for (int64_t d = axis; d < input.dim(); ++d) {
    axes.push_back(int(d));
    count *= input.size(d);
  }
  EngineLock g(engine_mutex());
  DType t = to_loom(input.scalar_type()), acc = acc_of(t);
  Shape s = shape_of(input.sizes());
  NodeRef x = cast(read_tensor(input), acc);
  NodeRef mu = mean_over(x, axes, count);
  NodeRef centered = binary(Op::Sub, x, mu);
  NodeRef var = mean_over(binary(Op::Mul, centered, centered), axes, count);
  NodeRef r = unary(Op::Rsqrt, binary(Op::Add, var, scalar(eps, acc, s)));
  // x * rstd - rstd * mean, as the CPU's kernel forms it (the first product fused with the
  // sum, as its compiler fused them): when the variance is tiny next to eps, the two
  // products cancel and the rounding left over is the CPU's. torch 2.x's kernel for float
  // and double forms (x - mean) * rstd instead (its reduced floats keep the first form).
  // Then y * gamma + beta, fused.
  const bool centered_first = LOOM_TORCH_AT_LEAST(2, 0) && !is_reduced_float(t);
  NodeRef y = centered_first ? binary(Op::Mul, centered, r)
                             : mul_add(x, r, unary(Op::Neg, binary(Op::Mul, r, mu)));
  NodeRef gamma = has(weight) ? along(cast(read_tensor(*weight), acc), s, axis) : nullptr;
  NodeRef beta = has(bias) ? along(cast(read_tensor(*bias), acc), s, axis) : nullptr;
  if (gamma && beta) y = mul_add(y, gamma, beta);
  else if (gamma) y = binary(Op::Mul, y, gamma);
  else if (beta) y = binary(Op::Add, y, beta);
  assign(out, cast(y, t));
  // mean and rstd keep the normalized dims as size 1.
  Shape stat = shape_of(mean.sizes());
  IndexMap pick;  // stat coords -> the first element of each normalized block
  pick.offs.assign(s.size(), 0);
  for (size_t j = 0; j < s.size(); ++j) {
    bool keep = int64_t(j) < axis;
    pick.dim_of.push_back(keep ? int(j) : -1);
    pick.mult.push_back(keep ? 1 : 0);
  }
  assign(mean, cast(reindex(mu, stat, pick), to_loom(mean.scalar_type())));
  assign(rstd, cast(reindex(r, stat, pick), to_loom(rstd.scalar_type())));
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, at::IntArrayRef normalized, const Tensor& mean,
    const Tensor& rstd, const OptTensor& weight, const OptTensor& bias, std::array<bool, 3> mask) {
  check_operands("native_layer_norm_backward", {grad_out, input, mean, rstd});
  const int64_t axis = input.dim() - int64_t(normalized.size());
  std::vector<int> inner, outer;
  int64_t count = 1;
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d >= axis) {
      inner.push_back(int(d));
      count *= input.size(d);
    } else {
      outer.push_back(int(d));
    }
  }
  Tensor gi, gw, gb;
  EngineLock g(engine_mutex());
  DType t = to_loom(input.scalar_type()), acc = acc_of(t);
  Shape s = shape_of(input.sizes());
  NodeRef x = cast(read_tensor(input), acc), go = cast(read_tensor(grad_out), acc);
  NodeRef mu = expand(cast(read_tensor(mean), acc), s), r = expand(cast(read_tensor(rstd), acc), s);
  // The CPU's forms: x̂ = rstd x - rstd mean, and the input gradient as
  // rstd g + b x + c from the row sums of g and g x (g = dy * gamma).
  NodeRef xhat = mul_add(r, x, unary(Op::Neg, binary(Op::Mul, r, mu)));
  auto per_feature = [&](const NodeRef& v, const Tensor& like) {
    NodeRef sum = reduce(ReduceKind::Sum, v, outer, acc);
    Shape ws = shape_of(like.sizes());
    IndexMap m;
    m.offs.assign(s.size(), 0);
    for (size_t j = 0; j < ws.size(); ++j) {
      m.dim_of.push_back(int(axis + int64_t(j)));
      m.mult.push_back(1);
    }
    return cast(reindex(sum, ws, m), to_loom(like.scalar_type()));
  };
  if (mask[0] && input.numel() > 0) {
    // In the CPU's order: ds = sum dy x gamma, db = sum dy gamma, b = (db mean - ds) rstd^3 / N,
    // c = -b mean - db rstd / N, dx = rstd dy gamma + b x + c.
    auto sum_over = [&](const NodeRef& v) { return expand(reduce(ReduceKind::Sum, v, inner, acc), s); };
    auto mul = [](const NodeRef& a, const NodeRef& b) { return binary(Op::Mul, a, b); };
    NodeRef w = has(weight) ? along(cast(read_tensor(*weight), acc), s, axis) : nullptr;
    NodeRef ds = sum_over(w ? mul(mul(go, x), w) : mul(go, x));
    NodeRef db = sum_over(w ? mul(go, w) : go);
    NodeRef scale = scalar(1.0 / double(count), acc, s);
    // Each first product fused with the sum that reads it, as the CPU's compiler fused them.
    NodeRef b = mul(mul(mul(mul(mul_add(db, mu, unary(Op::Neg, ds)), r), r), r), scale);
    NodeRef c = mul_add(unary(Op::Neg, b), mu, unary(Op::Neg, mul(mul(db, r), scale)));
    NodeRef ry = w ? mul_add(mul(r, go), w, mul(b, x)) : mul_add(r, go, mul(b, x));
    NodeRef v = binary(Op::Add, ry, c);
    gi = empty_loom(input.sizes(), input.scalar_type());
    assign(gi, cast(v, t));
  } else if (mask[0]) {
    gi = empty_loom(input.sizes(), input.scalar_type());
  }
  if (mask[1] && has(weight)) {
    gw = empty_loom(weight->sizes(), weight->scalar_type());
    if (input.numel() > 0) assign(gw, per_feature(binary(Op::Mul, go, xhat), *weight));
    else gw.zero_();
  }
  if (mask[2] && has(bias)) {
    gb = empty_loom(bias->sizes(), bias->scalar_type());
    if (input.numel() > 0) assign(gb, per_feature(go, *bias));
    else gb.zero_();
  }
  return {gi, gw, gb};
}

// --- batch norm ---

std::vector<int> batch_axes(const Tensor& input) {
  std::vector<int> axes{0};
  for (int64_t d = 2; d < input.dim(); ++d) axes.push_back(int(d));
  return axes;
}

// A (C) value from an (N, C, ...) value reduced over batch_axes.
NodeRef per_channel(const NodeRef& reduced, int64_t c) {
  IndexMap m;
  m.offs.assign(reduced->shape.size(), 0);
  m.dim_of.push_back(1);
  m.mult.push_back(1);
  return reindex(reduced, {c}, m);
}

std::tuple<Tensor, Tensor, Tensor> batch_norm(const Tensor& input, const OptTensor& weight,
                                              const OptTensor& bias, const OptTensor& running_mean,
                                              const OptTensor& running_var, bool training,
                                              double momentum, double eps) {
  check_operands("native_batch_norm", {input});
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dims, got ", input.dim());
  const int64_t c = input.size(1);
  const int64_t count = c == 0 ? 0 : input.numel() / c;
  TORCH_CHECK(!training || count > 1, "Expected more than 1 value per channel when training, got input size ", input.sizes());
  if (!training)
    TORCH_CHECK(has(running_mean) && has(running_var), "running_mean and running_var must be defined in evaluation mode");
  DType t = to_loom(input.scalar_type()), acc = acc_of(t);
  c10::ScalarType stat_type = is_reduced_float(t) ? at::kFloat : input.scalar_type();
  Tensor out = empty_loom(input.sizes(), input.scalar_type(), input.suggest_memory_format());
  Tensor save_mean = empty_loom({training ? c : 0}, stat_type);
  Tensor save_invstd = empty_loom({training ? c : 0}, stat_type);
  if (input.numel() == 0) return {out, save_mean, save_invstd};
  EngineLock g(engine_mutex());
  Shape s = shape_of(input.sizes());
  std::vector<int> axes = batch_axes(input);
  NodeRef x = cast(read_tensor(input), acc);
  NodeRef mu, invstd;
  if (training) {
    // The statistics are (C) values that the output reads through broadcasts: each is
    // computed once, by whichever kernel needs it first (Node::stored).
    NodeRef mu_c = per_channel(reduce(ReduceKind::Sum, x, axes, acc), c);
    mu_c = binary(Op::Div, mu_c, scalar(double(count), acc, {c}));
    mu = along(mu_c, s, 1);
    NodeRef centered = binary(Op::Sub, x, mu);
    NodeRef sq = reduce(ReduceKind::Sum, binary(Op::Mul, centered, centered), axes, acc);
    NodeRef var_c = binary(Op::Div, per_channel(sq, c), scalar(double(count), acc, {c}));
    NodeRef invstd_c = unary(Op::Rsqrt, binary(Op::Add, var_c, scalar(eps, acc, {c})));
    invstd = along(invstd_c, s, 1);
    assign(save_mean, mu_c);
    assign(save_invstd, invstd_c);
    if (has(running_mean)) {
      NodeRef rm = cast(read_tensor(*running_mean), acc);
      write_tensor(*running_mean, cast(binary(Op::Add, binary(Op::Mul, rm, scalar(1 - momentum, acc, {c})),
                                              binary(Op::Mul, mu_c, scalar(momentum, acc, {c}))),
                                       to_loom(running_mean->scalar_type())));
    }
    if (has(running_var)) {
      NodeRef rv = cast(read_tensor(*running_var), acc);
      NodeRef unbiased = binary(Op::Mul, var_c, scalar(double(count) / double(count - 1), acc, {c}));
      write_tensor(*running_var, cast(binary(Op::Add, binary(Op::Mul, rv, scalar(1 - momentum, acc, {c})),
                                             binary(Op::Mul, unbiased, scalar(momentum, acc, {c}))),
                                      to_loom(running_var->scalar_type())));
    }
  } else {
    mu = along(cast(read_tensor(*running_mean), acc), s, 1);
    invstd = unary(Op::Rsqrt, binary(Op::Add, along(cast(read_tensor(*running_var), acc), s, 1),
                                     scalar(eps, acc, s)));
  }
  NodeRef y = binary(Op::Mul, binary(Op::Sub, x, mu), invstd);
  if (has(weight)) y = binary(Op::Mul, y, along(cast(read_tensor(*weight), acc), s, 1));
  if (has(bias)) y = binary(Op::Add, y, along(cast(read_tensor(*bias), acc), s, 1));
  assign(out, cast(y, t));
  return {out, save_mean, save_invstd};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const OptTensor& weight,
    const OptTensor& running_mean, const OptTensor& running_var, const OptTensor& save_mean,
    const OptTensor& save_invstd, bool train, double eps, std::array<bool, 3> mask) {
  check_operands("native_batch_norm_backward", {grad_out, input});
  const int64_t c = input.size(1);
  const int64_t count = c == 0 ? 0 : input.numel() / c;
  DType t = to_loom(input.scalar_type()), acc = acc_of(t);
  Tensor gi, gw, gb;
  if (mask[0]) gi = empty_loom(input.sizes(), input.scalar_type(), input.suggest_memory_format());
  if (mask[1]) gw = has(weight) ? empty_loom(weight->sizes(), weight->scalar_type()) : empty_loom({c}, input.scalar_type());
  if (mask[2]) gb = has(weight) ? empty_loom(weight->sizes(), weight->scalar_type()) : empty_loom({c}, input.scalar_type());
  if (input.numel() == 0) {
    if (gw.defined()) gw.zero_();
    if (gb.defined()) gb.zero_();
    return {gi, gw, gb};
  }
  EngineLock g(engine_mutex());
  Shape s = shape_of(input.sizes());
  std::vector<int> axes = batch_axes(input);
  NodeRef x = cast(read_tensor(input), acc), go = cast(read_tensor(grad_out), acc);
  NodeRef mu, invstd;
  if (train) {
    mu = along(cast(read_tensor(*save_mean), acc), s, 1);
    invstd = along(cast(read_tensor(*save_invstd), acc), s, 1);
  } else {
    mu = along(cast(read_tensor(*running_mean), acc), s, 1);
    invstd = unary(Op::Rsqrt, binary(Op::Add, along(cast(read_tensor(*running_var), acc), s, 1),
                                     scalar(eps, acc, s)));
  }
  NodeRef xhat = binary(Op::Mul, binary(Op::Sub, x, mu), invstd);
  NodeRef w = has(weight) ? along(cast(read_tensor(*weight), acc), s, 1) : scalar(1.0, acc, s);
  // Both sums are read by the input gradient in training and by the parameter gradients:
  // computed in one pass (NOTE [Cohorts]).
  NodeRef go_sum = reduce(ReduceKind::Sum, go, axes, acc);
  NodeRef goxhat_sum = reduce(ReduceKind::Sum, binary(Op::Mul, go, xhat), axes, acc);
  if ((mask[0] && train) || (mask[1] && mask[2])) make_cohort({go_sum, goxhat_sum});
  if (mask[0]) {
    NodeRef v;
    if (train) {
      NodeRef a = mean_over(go, axes, count);
      NodeRef b = mean_over(binary(Op::Mul, go, xhat), axes, count);
      v = binary(Op::Mul, binary(Op::Mul, w, invstd),
                 binary(Op::Sub, binary(Op::Sub, go, a), binary(Op::Mul, xhat, b)));
    } else {
      v = binary(Op::Mul, binary(Op::Mul, go, w), invstd);
    }
    assign(gi, cast(v, t));
  }
  if (mask[1]) assign(gw, cast(per_channel(goxhat_sum, c), to_loom(gw.scalar_type())));
  if (mask[2]) assign(gb, cast(per_channel(go_sum, c), to_loom(gb.scalar_type())));
  return {gi, gw, gb};
}

// torch 2.x's batch-norm entry points (what its decompositions and export reach; eager
// batch_norm still calls native_batch_norm): each is native_batch_norm or its backward, as
// the CPU's are. 1.13 has none of these schemas.
using Stats = std::tuple<Tensor, Tensor, Tensor>;
Stats bn_legit(const Tensor& input, const OptTensor& weight, const OptTensor& bias,
               Tensor& running_mean, Tensor& running_var, bool training, double momentum,
               double eps) {
  return at::native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                               eps);
}
Stats bn_legit_no_stats(const Tensor& input, const OptTensor& weight, const OptTensor& bias,
                        bool training, double momentum, double eps) {
  return at::native_batch_norm(input, weight, bias, Tensor(), Tensor(), training, momentum, eps);
}
std::tuple<Tensor, Tensor, Tensor, Tensor> bn_with_update(const Tensor& input,
                                                          const OptTensor& weight,
                                                          const OptTensor& bias,
                                                          Tensor& running_mean, Tensor& running_var,
                                                          double momentum, double eps) {
  auto [out, mean, invstd] =
      at::native_batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  return {out, mean, invstd, empty_loom({0}, at::kByte)};  // the CPU reserves nothing
}
Stats bn_backward_2x(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                     const OptTensor& running_mean, const OptTensor& running_var,
                     const OptTensor& save_mean, const OptTensor& save_var, bool update, double eps,
                     std::array<bool, 3> mask, const Tensor& reserve) {
  (void)reserve;
  return at::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
                                        save_mean, save_var, update, eps, mask);
}

// The out= forms: the functional result copied into the outs, resized as out= ops are.
void into_outs(const Stats& r, Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  const Tensor* from[] = {&std::get<0>(r), &std::get<1>(r), &std::get<2>(r)};
  Tensor* to[] = {&out, &save_mean, &save_invstd};
  for (int i = 0; i < 3; ++i) {
    at::native::resize_output(*to[i], from[i]->sizes());
    to[i]->copy_(*from[i]);
  }
}
std::tuple<Tensor&, Tensor&, Tensor&> native_bn_out(const Tensor& input, const OptTensor& weight,
                                                    const OptTensor& bias,
                                                    const OptTensor& running_mean,
                                                    const OptTensor& running_var, bool training,
                                                    double momentum, double eps, Tensor& out,
                                                    Tensor& save_mean, Tensor& save_invstd) {
  into_outs(at::native_batch_norm(input, weight, bias, running_mean, running_var, training,
                                  momentum, eps),
            out, save_mean, save_invstd);
  return {out, save_mean, save_invstd};
}
std::tuple<Tensor&, Tensor&, Tensor&> bn_legit_out(const Tensor& input, const OptTensor& weight,
                                                   const OptTensor& bias, Tensor& running_mean,
                                                   Tensor& running_var, bool training,
                                                   double momentum, double eps, Tensor& out,
                                                   Tensor& save_mean, Tensor& save_invstd) {
  into_outs(bn_legit(input, weight, bias, running_mean, running_var, training, momentum, eps), out,
            save_mean, save_invstd);
  return {out, save_mean, save_invstd};
}
std::tuple<Tensor&, Tensor&, Tensor&> bn_legit_no_stats_out(
    const Tensor& input, const OptTensor& weight, const OptTensor& bias, bool training,
    double momentum, double eps, Tensor& out, Tensor& save_mean, Tensor& save_invstd) {
  into_outs(bn_legit_no_stats(input, weight, bias, training, momentum, eps), out, save_mean,
            save_invstd);
  return {out, save_mean, save_invstd};
}
std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> bn_with_update_out(
    const Tensor& input, const OptTensor& weight, const OptTensor& bias, Tensor& running_mean,
    Tensor& running_var, double momentum, double eps, Tensor& out, Tensor& save_mean,
    Tensor& save_invstd, Tensor& reserve) {
  into_outs(bn_legit(input, weight, bias, running_mean, running_var, true, momentum, eps), out,
            save_mean, save_invstd);
  at::native::resize_output(reserve, {0});
  return {out, save_mean, save_invstd, reserve};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
  m.impl("native_batch_norm", TORCH_FN(batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
  // torch 2.x's (no schemas in 1.13: registered, never reached there)
  m.impl("native_batch_norm.out", TORCH_FN(native_bn_out));
  m.impl("_native_batch_norm_legit", TORCH_FN(bn_legit));
  m.impl("_native_batch_norm_legit.out", TORCH_FN(bn_legit_out));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(bn_legit_no_stats));
  m.impl("_native_batch_norm_legit.no_stats_out", TORCH_FN(bn_legit_no_stats_out));
  m.impl("_batch_norm_with_update", TORCH_FN(bn_with_update));
  m.impl("_batch_norm_with_update.out", TORCH_FN(bn_with_update_out));
  m.impl("batch_norm_backward", TORCH_FN(bn_backward_2x));
}

}  // namespace loom::aten
