// Ops that exist for complex numbers: conj_physical, angle, complex and polar. Their CPU
// kernels have no meta functions, so the checks and the result layout are spelled out
// here as the CPU's TensorIterator gives them.
#include <ATen/MetaFunctions.h>
#include <torch/library.h>

#include <cmath>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

// The layout TensorIterator gives a fresh output of an elementwise op over these inputs.
Tensor iterator_layout(const Tensor& a, const Tensor& b, c10::ScalarType dtype) {
  Tensor m = b.defined() ? at::meta::add(to_meta(a), to_meta(b)) : to_meta(a);
  return at::empty_like(m, m.options().dtype(dtype));
}

void check_cast(c10::ScalarType from, const Tensor& out) {
  TORCH_CHECK(at::canCast(from, out.scalar_type()), "result type ", from,
              " can't be cast to the desired output type ", out.scalar_type());
}

// --- conj_physical: the conjugate in memory (a copy for real tensors) ---

Tensor& conj_physical_out(const Tensor& self, Tensor& out) {
  check_operands("conj_physical", {self});
  check_cast(self.scalar_type(), out);
  match_out(out, iterator_layout(self, Tensor(), out.scalar_type()));
  EngineLock g(engine_mutex());
  NodeRef v = read_tensor(self);
  assign(out, self.is_complex() ? unary(Op::Conj, v) : v);
  return out;
}

Tensor& conj_physical_ip(Tensor& self) {
  if (!self.is_complex()) return self;
  EngineLock g(engine_mutex());
  write_tensor(self, unary(Op::Conj, read_tensor(self)));
  return self;
}

// --- angle: arg(z), real; for reals pi below zero and 0 otherwise, NaN kept ---

c10::ScalarType angle_dtype(const Tensor& self) {
  c10::ScalarType t = self.scalar_type();
  if (at::isComplexType(t)) return c10::toRealValueType(t);
  if (at::isIntegralType(t, /*includeBool=*/true)) return c10::get_default_dtype_as_scalartype();
  return t;
}

NodeRef angle_value(const Tensor& self, DType result) {
  NodeRef x = read_tensor(self);
  if (is_complex(x->dtype)) return binary(Op::Atan2, unary(Op::Imag, x), unary(Op::Real, x));
  DType c = is_reduced_float(result) ? DType::Float32 : result;
  x = cast(x, c);
  NodeRef zero = constant(Scalar::of_int(0), c, x->shape);
  NodeRef pi = constant(Scalar::of_float(M_PI), c, x->shape);
  return where(unary(Op::IsNan, x), x, where(binary(Op::Lt, x, zero), pi, zero));
}

// A complex input's angle goes through a complex temporary on the CPU, whose real part is
// copied into a fresh (contiguous) result.
Tensor angle_fn(const Tensor& self) {
  Tensor meta = self.is_complex()
                    ? at::empty(self.sizes(), to_meta(self).options().dtype(angle_dtype(self)))
                    : iterator_layout(self, Tensor(), angle_dtype(self));
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, angle_value(self, to_loom(meta.scalar_type())));
  return out;
}

Tensor& angle_out(const Tensor& self, Tensor& out) {
  check_operands("angle", {self});
  check_cast(angle_dtype(self), out);
  match_out(out, iterator_layout(self, Tensor(), out.scalar_type()));
  EngineLock g(engine_mutex());
  assign(out, angle_value(self, to_loom(angle_dtype(self))));
  return out;
}

// --- complex(real, imag) and polar(abs, angle): the CPU's checks, then one Complex node ---

void check_complex_parts(const Tensor& a, const Tensor& b, const Tensor& out) {
  auto floating = [](c10::ScalarType t) {
    return t == at::kFloat || t == at::kDouble || t == at::kHalf;
  };
  TORCH_CHECK(floating(a.scalar_type()) && floating(b.scalar_type()),
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(),
              " and ", b.scalar_type());
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ",
              a.scalar_type(), " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(out.scalar_type() == c10::toComplexType(a.scalar_type()),
              "Expected object of scalar type ", c10::toComplexType(a.scalar_type()),
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
}

template <class PartsFn>
Tensor& complex_into(const char* op, const Tensor& a, const Tensor& b, Tensor& out, PartsFn parts) {
  check_operands(op, {a, b});
  check_complex_parts(a, b, out);
  match_out(out, iterator_layout(a, b, out.scalar_type()));
  EngineLock g(engine_mutex());
  Shape s = shape_of(out.sizes());
  DType part = real_part_dtype(to_loom(out.scalar_type()));
  NodeRef x = operand(a, s, part), y = operand(b, s, part);
  auto re_im = parts(x, y);
  assign(out, binary(Op::Complex, re_im.first, re_im.second));
  return out;
}

Tensor& complex_out(const Tensor& re, const Tensor& im, Tensor& out) {
  return complex_into("complex", re, im, out,
                      [](const NodeRef& x, const NodeRef& y) { return std::make_pair(x, y); });
}

Tensor& polar_out(const Tensor& abs, const Tensor& angle, Tensor& out) {
  return complex_into("polar", abs, angle, out, [](const NodeRef& r, const NodeRef& t) {
    return std::make_pair(binary(Op::Mul, r, unary(Op::Cos, t)),
                          binary(Op::Mul, r, unary(Op::Sin, t)));
  });
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("conj_physical.out", conj_physical_out);
  m.impl("conj_physical_", conj_physical_ip);
  m.impl("angle", angle_fn);
  m.impl("angle.out", angle_out);
  m.impl("complex.out", complex_out);
  m.impl("polar.out", polar_out);
}

}  // namespace loom::aten
