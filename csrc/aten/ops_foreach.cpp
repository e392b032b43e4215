// The _foreach_* ops the optimizers call (SGD, Adam, AdamW with foreach=True): each is
// the per-tensor op on every element of the lists, recorded lazily, so an optimizer step
// is one batch of lazy writes that the next realization fuses per parameter.
#include <ATen/native/ForeachUtils.h>
#include <torch/library.h>

#include "aten/op_util.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using at::TensorList;
using c10::Scalar;
using ScalarList = at::ArrayRef<Scalar>;
using Tensors = std::vector<Tensor>;

// --- binary: Scalar, ScalarList, List ---

#define LOOM_FOREACH_BINARY(op)                                                        \
  Tensors op##_scalar(TensorList self, const Scalar& s) {                             \
    at::native::check_foreach_api_restrictions(self);                                  \
    Tensors out;                                                                       \
    for (const Tensor& t : self) out.push_back(at::op(t, s));                          \
    return out;                                                                        \
  }                                                                                    \
  void op##_scalar_(TensorList self, const Scalar& s) {                               \
    at::native::check_foreach_api_restrictions(self);                                  \
    for (const Tensor& t : self) t.op##_(s);                                           \
  }                                                                                    \
  Tensors op##_scalars(TensorList self, ScalarList s) {                               \
    at::native::check_foreach_api_restrictions(self, s);                               \
    Tensors out;                                                                       \
    for (size_t i = 0; i < self.size(); ++i) out.push_back(at::op(self[i], s[i]));     \
    return out;                                                                        \
  }                                                                                    \
  void op##_scalars_(TensorList self, ScalarList s) {                                 \
    at::native::check_foreach_api_restrictions(self, s);                               \
    for (size_t i = 0; i < self.size(); ++i) self[i].op##_(s[i]);                      \
  }

LOOM_FOREACH_BINARY(add)
LOOM_FOREACH_BINARY(sub)
LOOM_FOREACH_BINARY(mul)
LOOM_FOREACH_BINARY(div)

#define LOOM_FOREACH_LIST_ALPHA(op)                                                    \
  Tensors op##_list(TensorList self, TensorList other, const Scalar& alpha) {         \
    at::native::check_foreach_api_restrictions(self, other);                           \
    Tensors out;                                                                       \
    for (size_t i = 0; i < self.size(); ++i) out.push_back(at::op(self[i], other[i], alpha)); \
    return out;                                                                        \
  }                                                                                    \
  void op##_list_(TensorList self, TensorList other, const Scalar& alpha) {           \
    at::native::check_foreach_api_restrictions(self, other);                           \
    for (size_t i = 0; i < self.size(); ++i) self[i].op##_(other[i], alpha);           \
  }

#define LOOM_FOREACH_LIST(op, fn, method)                                              \
  Tensors op##_list(TensorList self, TensorList other) {                              \
    at::native::check_foreach_api_restrictions(self, other);                           \
    Tensors out;                                                                       \
    for (size_t i = 0; i < self.size(); ++i) out.push_back(at::fn(self[i], other[i])); \
    return out;                                                                        \
  }                                                                                    \
  void op##_list_(TensorList self, TensorList other) {                                \
    at::native::check_foreach_api_restrictions(self, other);                           \
    for (size_t i = 0; i < self.size(); ++i) method;                                   \
  }

LOOM_FOREACH_LIST_ALPHA(add)
LOOM_FOREACH_LIST_ALPHA(sub)
LOOM_FOREACH_LIST(mul, mul, self[i].mul_(other[i]))
LOOM_FOREACH_LIST(div, div, self[i].div_(other[i]))
LOOM_FOREACH_LIST(maximum, maximum, self[i].copy_(at::maximum(self[i], other[i])))
LOOM_FOREACH_LIST(minimum, minimum, self[i].copy_(at::minimum(self[i], other[i])))

// --- addcmul / addcdiv: self + value * t1 (op) t2 ---

#define LOOM_FOREACH_ADDC(op)                                                            \
  Tensors op##_scalar(TensorList self, TensorList t1, TensorList t2, const Scalar& v) {  \
    at::native::check_foreach_api_restrictions(self, t1, t2);                            \
    Tensors out;                                                                         \
    for (size_t i = 0; i < self.size(); ++i) out.push_back(at::op(self[i], t1[i], t2[i], v)); \
    return out;                                                                          \
  }                                                                                      \
  void op##_scalar_(TensorList self, TensorList t1, TensorList t2, const Scalar& v) {    \
    at::native::check_foreach_api_restrictions(self, t1, t2);                            \
    for (size_t i = 0; i < self.size(); ++i) self[i].op##_(t1[i], t2[i], v);             \
  }                                                                                      \
  Tensors op##_scalars(TensorList self, TensorList t1, TensorList t2, ScalarList v) {    \
    at::native::check_foreach_api_restrictions(self, t1, t2, v);                         \
    Tensors out;                                                                         \
    for (size_t i = 0; i < self.size(); ++i) out.push_back(at::op(self[i], t1[i], t2[i], v[i])); \
    return out;                                                                          \
  }                                                                                      \
  void op##_scalars_(TensorList self, TensorList t1, TensorList t2, ScalarList v) {      \
    at::native::check_foreach_api_restrictions(self, t1, t2, v);                         \
    for (size_t i = 0; i < self.size(); ++i) self[i].op##_(t1[i], t2[i], v[i]);          \
  }

LOOM_FOREACH_ADDC(addcmul)
LOOM_FOREACH_ADDC(addcdiv)

// --- unary ---

#define LOOM_FOREACH_UNARY_OPS(X)                                                            \
  X(abs) X(acos) X(asin) X(atan) X(ceil) X(cos) X(cosh) X(erf) X(erfc) X(exp) X(expm1)      \
  X(floor) X(frac) X(lgamma) X(log) X(log10) X(log1p) X(log2) X(neg) X(reciprocal) X(round) \
  X(sigmoid) X(sin) X(sinh) X(sqrt) X(tan) X(tanh) X(trunc)

#define LOOM_FOREACH_UNARY(op)                                \
  Tensors op##_fn(TensorList self) {                          \
    at::native::check_foreach_api_restrictions(self);         \
    Tensors out;                                              \
    for (const Tensor& t : self) out.push_back(at::op(t));    \
    return out;                                               \
  }                                                           \
  void op##_ip(TensorList self) {                             \
    at::native::check_foreach_api_restrictions(self);         \
    for (const Tensor& t : self) t.op##_();                   \
  }

LOOM_FOREACH_UNARY_OPS(LOOM_FOREACH_UNARY)

void zero_ip(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  for (const Tensor& t : self) t.zero_();
}

Tensors norm_dtype_fn(TensorList self, const Scalar& ord, c10::optional<at::ScalarType> dtype) {
  at::native::check_foreach_api_restrictions(self);
  Tensors out;
  for (const Tensor& t : self) {
    out.push_back(at::linalg_vector_norm(t, ord, c10::nullopt, /*keepdim=*/false, dtype));
  }
  return out;
}
Tensors norm_fn(TensorList self, const Scalar& ord) { return norm_dtype_fn(self, ord, c10::nullopt); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define REG_BINARY(op)                                             \
  m.impl("_foreach_" #op ".Scalar", TORCH_FN(op##_scalar));        \
  m.impl("_foreach_" #op "_.Scalar", TORCH_FN(op##_scalar_));      \
  m.impl("_foreach_" #op ".ScalarList", TORCH_FN(op##_scalars));   \
  m.impl("_foreach_" #op "_.ScalarList", TORCH_FN(op##_scalars_)); \
  m.impl("_foreach_" #op ".List", TORCH_FN(op##_list));            \
  m.impl("_foreach_" #op "_.List", TORCH_FN(op##_list_));
  REG_BINARY(add)
  REG_BINARY(sub)
  REG_BINARY(mul)
  REG_BINARY(div)
  m.impl("_foreach_maximum.List", TORCH_FN(maximum_list));
  m.impl("_foreach_maximum_.List", TORCH_FN(maximum_list_));
  m.impl("_foreach_minimum.List", TORCH_FN(minimum_list));
  m.impl("_foreach_minimum_.List", TORCH_FN(minimum_list_));
#define REG_ADDC(op)                                               \
  m.impl("_foreach_" #op ".Scalar", TORCH_FN(op##_scalar));        \
  m.impl("_foreach_" #op "_.Scalar", TORCH_FN(op##_scalar_));      \
  m.impl("_foreach_" #op ".ScalarList", TORCH_FN(op##_scalars));   \
  m.impl("_foreach_" #op "_.ScalarList", TORCH_FN(op##_scalars_));
  REG_ADDC(addcmul)
  REG_ADDC(addcdiv)
#define REG_UNARY(op)                                \
  m.impl("_foreach_" #op, TORCH_FN(op##_fn));        \
  m.impl("_foreach_" #op "_", TORCH_FN(op##_ip));
  LOOM_FOREACH_UNARY_OPS(REG_UNARY)
  m.impl("_foreach_zero_", TORCH_FN(zero_ip));
  if constexpr (kForeachNormHasDtype) {
    m.impl("_foreach_norm.Scalar", TORCH_FN(norm_dtype_fn));
  } else {
    m.impl("_foreach_norm.Scalar", TORCH_FN(norm_fn));
  }
}

}  // namespace loom::aten
