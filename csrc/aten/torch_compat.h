// What differs between the PyTorch releases the binding builds against: Debian's 1.13 and
// the 2.x of the GPU machines (NOTE [Torch releases]).
#pragma once

#include <ATen/ops/_foreach_norm_ops.h>
#include <ATen/ops/embedding_dense_backward_ops.h>
#include <ATen/ops/rrelu_with_noise_ops.h>
#include <ATen/ops/var_ops.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/version.h>

#include <tuple>

// NOTE [Torch releases]: Loom is built and tested on PyTorch 1.13 (Debian) and built against
// the 2.x headers too (2.6 and 2.14 from Debian, 2.11 on the GPU machine). Where an op's
// schema changed, a kernel takes the argument types of its release's generated signature
// (at::_ops::<op>::schema), so that no release number is guessed; c10 spellings that were
// renamed get one macro each here. Ops that a release added or removed are registered
// anyway: an impl of an op the release lacks is never called.
#define LOOM_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||       \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// An IntArrayRef of sizes given as SymInts, and back (asIntArrayRefSlow took a call site
// from 2.0 on; fromIntArrayRef became fromIntArrayRefSlow).
#ifdef C10_AS_INTARRAYREF_SLOW
#define LOOM_INT_SIZES(a) C10_AS_INTARRAYREF_SLOW(a)
#define LOOM_SYM_SIZES(a) c10::fromIntArrayRefSlow(a)
#else
#define LOOM_INT_SIZES(a) c10::asIntArrayRefSlow(a)
#define LOOM_SYM_SIZES(a) c10::fromIntArrayRef(a)
#endif

namespace loom::aten {

// The I-th argument type of a generated op signature.
template <class Schema>
struct SchemaArgs;
template <class R, class... A>
struct SchemaArgs<R(A...)> {
  static constexpr size_t count = sizeof...(A);
  template <size_t I>
  using at = std::tuple_element_t<I, std::tuple<A...>>;
};

// var/std's correction: `int?` in 1.13, `Scalar?` (fractional corrections) from 2.0.
using Correction = SchemaArgs<at::_ops::var_correction::schema>::at<2>;
inline double correction_value(const c10::optional<int64_t>& c) { return c ? double(*c) : 1.0; }
inline double correction_value(const c10::optional<c10::Scalar>& c) {
  return c ? c->toDouble() : 1.0;
}

// rrelu_with_noise's noise is declared written (`Tensor(b!)`, a non-const Tensor&) from 2.x.
using RreluNoise = SchemaArgs<at::_ops::rrelu_with_noise::schema>::at<1>;

// embedding_dense_backward's padding_idx: `int` in 1.13, `SymInt` from 2.x. A kernel taking
// any SymInt must take every SymInt of its schema as one.
using EmbeddingPaddingIdx = SchemaArgs<at::_ops::embedding_dense_backward::schema>::at<3>;
inline int64_t concrete(int64_t v) { return v; }
inline int64_t concrete(const c10::SymInt& v) { return v.expect_int(); }

// _foreach_norm.Scalar gained a result dtype after 1.13.
constexpr bool kForeachNormHasDtype = SchemaArgs<at::_ops::_foreach_norm_Scalar::schema>::count == 3;

// Named tensors are gone from later releases; a tensor there has no names.
namespace detail {
template <class T>
auto has_names(const T& t, int) -> decltype(t.has_names()) {
  return t.has_names();
}
template <class T>
bool has_names(const T&, long) {
  return false;
}
}  // namespace detail
template <class T>
bool has_names(const T& t) {
  return detail::has_names(t, 0);
}

// A warning handler that drops what it is given, for a probe of the CPU's behaviour that
// would warn (c10::WarningHandler::process took a c10::Warning from torch 2.0 on, when the
// namespace c10::Warning of the handler guard became c10::WarningUtils).
struct QuietWarnings : c10::WarningHandler {
#if LOOM_TORCH_AT_LEAST(2, 0)
  void process(const c10::Warning&) override {}
#else
  void process(const c10::SourceLocation&, const std::string&, const bool) override {}
#endif
};
#if LOOM_TORCH_AT_LEAST(2, 0)
using WarningHandlerGuard = c10::WarningUtils::WarningHandlerGuard;
#else
using WarningHandlerGuard = c10::Warning::WarningHandlerGuard;
#endif

}  // namespace loom::aten
