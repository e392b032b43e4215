// Elementwise ops over plain operands lay out their results without a meta call
// (NOTE [Plain binary ops] in plain.cpp).
#pragma once

#include <ATen/ATen.h>

#include <initializer_list>

#include "aten/op_util.h"

namespace loom::aten {

// A Loom tensor that is contiguous and unnamed.
bool plain(const at::Tensor& t);
// A Python number (a wrapped CPU scalar).
bool number(const at::Tensor& t);
// The result sizes of an elementwise op over plain operands (undefined ones skipped), or
// nullopt. `cpu_scalars`: CPU 0-dim tensors that are not Python numbers count as numbers
// (where takes them so; binary ops leave them to the meta call).
c10::optional<at::DimVector> plain_sizes(std::initializer_list<const at::Tensor*> ts,
                                         bool cpu_scalars = false);

// The result dtype of `op` over plain operands that promote to `common`; nullopt for the
// ops whose meta functions check more.
c10::optional<c10::ScalarType> plain_dtype(Op op, c10::ScalarType common);

// A fresh contiguous result of `sizes` and `dtype`, holding value(shape, dtype).
template <class ValueFn>
at::Tensor plain_functional(at::IntArrayRef sizes, c10::ScalarType dtype, ValueFn value) {
  EngineLock g(engine_mutex());
  at::Tensor out = empty_loom(sizes, dtype, at::MemoryFormat::Contiguous);
  assign(out, value(shape_of(out.sizes()), to_loom(dtype)));
  return out;
}
template <class ValueFn>
at::Tensor plain_functional(const at::Tensor& like, c10::ScalarType dtype, ValueFn value) {
  return plain_functional(like.sizes(), dtype, value);
}

// Raises TensorIterator's error when an in-place op's result dtype `r` does not cast into
// self's.
void check_inplace_cast(c10::ScalarType r, const at::Tensor& self);

// An in-place op over plain operands whose broadcast shape is self's own.
bool plain_into_self(const at::Tensor& self, const at::Tensor& other);

// The in-place form: value(shape, r) stored into self, once r casts into its dtype.
template <class ValueFn>
at::Tensor& plain_into(at::Tensor& self, c10::ScalarType r, ValueFn value) {
  check_inplace_cast(r, self);
  EngineLock g(engine_mutex());
  assign(self, value(shape_of(self.sizes()), to_loom(r)));
  return self;
}

}  // namespace loom::aten
