// softmax and log_softmax forward, built from reductions (max and sum get kernels of
// their own; the normalisation fuses into the consumer), and 1.13's private attention.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/op_util.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;

NodeRef softmax_value(const Tensor& self, int64_t dim, bool log, DType out) {
  Shape s = shape_of(self.sizes());
  if (s.empty()) s = {1};  // a 0-dim input normalises over a single element
  DType acc = is_reduced_float(out) ? DType::Float32 : out;
  NodeRef x = cast(read_tensor(self.dim() == 0 ? self.reshape({1}) : self), acc);
  std::vector<int> axis{int(at::maybe_wrap_dim(dim, self.dim() == 0 ? 1 : self.dim()))};
  NodeRef m = expand(reduce(ReduceKind::Max, x, axis, acc), s);
  NodeRef shifted = binary(Op::Sub, x, m);
  NodeRef e = unary(Op::Exp, shifted);
  NodeRef sum = reduce(ReduceKind::Sum, e, axis, acc);
  // As eager: times the reciprocal of the sum (one division per row, not per element).
  NodeRef r = log ? binary(Op::Sub, shifted, expand(unary(Op::Log, sum), s))
                  : binary(Op::Mul, e, expand(unary(Op::Reciprocal, sum), s));
  r = cast(r, out);
  if (self.dim() == 0) r = reindex(r, {}, IndexMap{{0}, {}, {}});
  return r;
}

Tensor softmax_impl(const Tensor& self, int64_t dim, bool half_to_float, bool log) {
  Tensor meta = log ? at::meta::_log_softmax(to_meta(self), dim, half_to_float)
                    : at::meta::_softmax(to_meta(self), dim, half_to_float);
  // The CPU names its kernel by whether the softmax runs over the last dim.
  bool last = self.dim() <= 1 || at::maybe_wrap_dim(dim, self.dim()) == self.dim() - 1;
  std::string kernel = std::string(log ? "log_" : "") +
                       (last ? "softmax_lastdim_kernel_impl" : "softmax_kernel_impl");
  check_not_complex(kernel.c_str(), self.scalar_type());
  // The CPU kernels exist for floating types only (an integer input needs dtype=).
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "\"", kernel, "\" not implemented for '",
              c10::toString(self.scalar_type()), "'");
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, softmax_value(self, dim, log, to_loom(meta.scalar_type())));
  return out;
}

Tensor softmax_fn(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl(self, dim, half_to_float, false);
}
Tensor log_softmax_fn(const Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl(self, dim, half_to_float, true);
}
Tensor& softmax_into(const Tensor& self, int64_t dim, bool half_to_float, bool log, Tensor& out) {
  Tensor r = softmax_impl(self, dim, half_to_float, log);
  at::native::resize_output(out, r.sizes());
  EngineLock g(engine_mutex());
  assign(out, read_tensor(r));
  return out;
}
Tensor& softmax_out(const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  return softmax_into(self, dim, half_to_float, false, out);
}
Tensor& log_softmax_out(const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) {
  return softmax_into(self, dim, half_to_float, true, out);
}

#if !LOOM_TORCH_AT_LEAST(2, 0)
// torch 1.13's attention without gradients: the CPU's kernel is its composite form
// (scaled product, mask, softmax, dropout, product), which runs on Loom's ops here too.
// Later releases dispatch attention through other ops and have no such one.
std::tuple<Tensor, Tensor> scaled_dot_product_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const c10::optional<Tensor>& attn_mask, double dropout_p, bool need_attn_weights,
    bool is_causal) {
  return at::_scaled_dot_product_attention_math(query, key, value, attn_mask, dropout_p,
                                               need_attn_weights, is_causal);
}
#endif

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#if !LOOM_TORCH_AT_LEAST(2, 0)
  m.impl("_scaled_dot_product_attention_forward", scaled_dot_product_attention_forward);
#endif
  m.impl("_softmax", softmax_fn);
  m.impl("_softmax.out", softmax_out);
  m.impl("_log_softmax", log_softmax_fn);
  m.impl("_log_softmax.out", log_softmax_out);
}

}  // namespace loom::aten
