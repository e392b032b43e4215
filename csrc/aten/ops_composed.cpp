// aten ops that PyTorch dispatches to a CPU kernel although they are compositions of other
// ops: registered for Loom as compositions of Loom's ops, so that none runs through the CPU
// fallback. Where the CPU's kernel is itself device-generic code (tensordot.out,
// mvlgamma.out, native_dropout and its backward, _assert_async), it is registered as is.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_assert_async_native.h>
#include <ATen/ops/is_nonzero_native.h>
#include <ATen/ops/mvlgamma_native.h>
#include <ATen/ops/native_channel_shuffle_native.h>
#include <ATen/ops/native_dropout_backward_native.h>
#include <ATen/ops/native_dropout_native.h>
#include <ATen/ops/tensordot_native.h>
#include <torch/library.h>

#include <limits>

#include "aten/elementwise.h"
#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

// The CPU's checks; its result keeps the input's memory format (the shuffle itself is a
// view, a permute and a copy).
Tensor channel_shuffle_fn(const Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  const int64_t c = self.size(1);
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c,
              " channels and ", groups, " groups.");
  if (self.numel() == 0) return self;
  return at::native::math_channel_shuffle(self, groups).contiguous(self.suggest_memory_format());
}

// bernoulli(p) into out: out takes p's shape, then draws with the probabilities p holds.
Tensor& bernoulli_out_fn(const Tensor& p, c10::optional<at::Generator> gen, Tensor& out) {
  at::native::resize_output(out, p.sizes());
  return out.bernoulli_(p, std::move(gen));
}

// Structured ops whose meta function checks and sizes the out as the CPU's does; the
// functional result is copied in.
Tensor& addmm_activation_out(const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                             const c10::Scalar& beta, const c10::Scalar& alpha, bool use_gelu,
                             Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::_addmm_activation_outf(to_meta(self), to_meta(mat1), to_meta(mat2), beta, alpha,
                                   use_gelu, mo);
  at::native::resize_output(out, mo.sizes());
  // The functional form is composed from this one: addmm, then relu or exact gelu in place.
  at::addmm_out(out, self, mat1, mat2, beta, alpha);
  return use_gelu ? at::gelu_(out) : at::relu_(out);
}

Tensor& norm_dtype_out(const Tensor& self, const c10::optional<c10::Scalar>& p,
                       at::IntArrayRef dim, bool keepdim, at::ScalarType dtype, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::norm_outf(to_meta(self), p, dim, keepdim, dtype, mo);
  at::native::resize_output(out, mo.sizes());
  return out.copy_(at::norm(self, p, dim, keepdim, dtype));
}

// _add_relu: self + alpha * other clamped to [0, the largest value of self's dtype], as the
// CPU's add_clamp kernel (its vector loop: NaN stays, infinity becomes that largest value).
c10::Scalar add_relu_max(const Tensor& self) {
  switch (self.scalar_type()) {
    case at::kInt: return std::numeric_limits<int32_t>::max();
    case at::kLong: return std::numeric_limits<int64_t>::max();
    case at::kShort: return std::numeric_limits<int16_t>::max();
    case at::kChar: return std::numeric_limits<int8_t>::max();
    case at::kFloat: return std::numeric_limits<float>::max();
    case at::kDouble: return std::numeric_limits<double>::max();
    default: TORCH_CHECK(false, "Unsupported datatype for add_relu:", self.dtype().name());
  }
}
Tensor& add_relu_out(const Tensor& self, const Tensor& other, const c10::Scalar& alpha, Tensor& out) {
  const c10::Scalar hi = add_relu_max(self);
  return at::add_out(out, self, other, alpha).clamp_(0, hi);
}
Tensor add_relu_fn(const Tensor& self, const Tensor& other, const c10::Scalar& alpha) {
  const c10::Scalar hi = add_relu_max(self);
  return at::add(self, other, alpha).clamp_(0, hi);
}
Tensor& add_relu_ip(Tensor& self, const Tensor& other, const c10::Scalar& alpha) {
  const c10::Scalar hi = add_relu_max(self);
  return self.add_(other, alpha).clamp_(0, hi);
}
Tensor add_relu_scalar(const Tensor& self, const c10::Scalar& other, const c10::Scalar& alpha) {
  return add_relu_fn(self, wrap(other), alpha);
}
Tensor& add_relu_scalar_ip(Tensor& self, const c10::Scalar& other, const c10::Scalar& alpha) {
  return add_relu_ip(self, wrap(other), alpha);
}

// batch_norm_update_stats (SyncBatchNorm's): the per-channel mean and biased variance over
// every dim but 1, in float for a bfloat16 input with float running stats, and the running
// stats moved toward them (the unbiased variance) by `momentum`, as the CPU's.
std::tuple<Tensor, Tensor> batch_norm_update_stats_fn(const Tensor& self,
                                                      const c10::optional<Tensor>& running_mean,
                                                      const c10::optional<Tensor>& running_var,
                                                      double momentum) {
  const at::ScalarType st = self.scalar_type();
  TORCH_CHECK(at::isFloatingType(st) && st != at::kHalf,
              "\"batch_norm_update_stats_cpu\" not implemented for '", c10::toString(st), "'");
  const bool has_mean = running_mean && running_mean->defined();
  const bool has_var = running_var && running_var->defined();
  const bool mixed = st == at::kBFloat16 &&
                     ((has_mean && running_mean->scalar_type() == at::kFloat) ||
                      (has_var && running_var->scalar_type() == at::kFloat));
  const at::ScalarType dtype = mixed ? at::kFloat : st;
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < self.dim(); ++d) dims.push_back(d);
  const Tensor x = self.to(dtype);
  Tensor mean = at::mean(x, dims, false);
  Tensor var = at::var(x, dims, /*unbiased=*/false, false);
  const int64_t n = self.numel() / self.size(1);
  if (has_mean) running_mean->copy_(mean * momentum + *running_mean * (1 - momentum));
  if (has_var)
    running_var->copy_(var * (double(n) / double(n - 1)) * momentum + *running_var * (1 - momentum));
  return {mean, var};
}

// torch 2.x's _assert_async with a message, as its CPU kernel (no schema in 1.13).
void assert_async_msg(const Tensor& self, c10::string_view msg) {
  TORCH_CHECK(at::native::is_nonzero(self), msg.empty() ? "Assertion is failed" : msg);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_update_stats", TORCH_FN(batch_norm_update_stats_fn));
  m.impl("_add_relu.Tensor", TORCH_FN(add_relu_fn));
  m.impl("_add_relu_.Tensor", TORCH_FN(add_relu_ip));
  m.impl("_add_relu.out", TORCH_FN(add_relu_out));
  m.impl("_add_relu.Scalar", TORCH_FN(add_relu_scalar));
  m.impl("_add_relu_.Scalar", TORCH_FN(add_relu_scalar_ip));
  if (!composite_in_this_release("tensordot.out"))
    m.impl("tensordot.out", TORCH_FN(at::native::tensordot_out));
  m.impl("mvlgamma.out", TORCH_FN(at::native::mvlgamma_out));
  m.impl("native_dropout", TORCH_FN(at::native::native_dropout_cpu));
  m.impl("native_dropout_backward", TORCH_FN(at::native::native_dropout_backward));
  m.impl("_assert_async", TORCH_FN(at::native::_assert_async_cpu));
  m.impl("_assert_async.msg", TORCH_FN(assert_async_msg));
  m.impl("channel_shuffle", TORCH_FN(channel_shuffle_fn));
  m.impl("bernoulli.out", TORCH_FN(bernoulli_out_fn));
  m.impl("_addmm_activation.out", TORCH_FN(addmm_activation_out));
  m.impl("norm.dtype_out", TORCH_FN(norm_dtype_out));
}

}  // namespace loom::aten
