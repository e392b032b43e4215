// What the elementwise op files share: the layout of a fresh result, Python numbers as
// tensors, and the functional / into forms that run an op's value after its meta call.
#pragma once

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include "aten/op_util.h"

namespace loom::aten {

inline Shape out_shape(const at::Tensor& t) { return shape_of(t.sizes()); }
inline DType dtype_of(const at::Tensor& t) { return to_loom(t.scalar_type()); }

// The layout the CPU's TensorIterator gives a fresh result over these operands (one to
// three), with the dtype of `meta` (the op's meta result): some meta functions (logical_not,
// logical_and, isinf: those that build their result as empty(0) and call their out= form)
// return it contiguous instead.
at::Tensor iterator_layout(const at::Tensor& meta, const at::Tensor& a,
                           const at::Tensor& b = at::Tensor(), const at::Tensor& c = at::Tensor());

// A Python number as the CPU's ops receive it: a wrapped 0-dim CPU tensor.
at::Tensor wrap(const c10::Scalar& s);

// Runs `value(shape, result dtype)` into a new tensor laid out as meta_fn()'s result, after
// that call on meta tensors has checked the arguments.
template <class MetaFn, class ValueFn>
at::Tensor functional(MetaFn meta_fn, ValueFn value) {
  at::Tensor meta = meta_fn();
  EngineLock g(engine_mutex());
  at::Tensor out = result_like(meta);
  assign(out, value(out_shape(out), dtype_of(meta)));
  return out;
}

// The same into self or into out (already checked and sized by the caller's meta call).
template <class MetaFn, class ValueFn>
at::Tensor& into(at::Tensor& out, MetaFn meta_fn, ValueFn value) {
  at::Tensor meta = meta_fn();  // the functional result: its dtype is the compute dtype
  at::assert_no_internal_overlap(out);  // as TensorIterator does for out= and in place
  EngineLock g(engine_mutex());
  assign(out, value(out_shape(out), dtype_of(meta)));
  return out;
}

}  // namespace loom::aten
