// Pointwise formulas for activations and losses. Arithmetic on graph values reads as the
// formula it builds (`x * 0.5 * (1.0 + erf(x * M_SQRT1_2))` is the nested binary()/unary()
// calls), and the functional, in-place and out= forms of an op share one store.
#pragma once

#include <ATen/ATen.h>

#include "aten/op_util.h"

namespace loom::aten {

// PyTorch's opmath: Half and BFloat16 compute in float and round once, when stored.
inline DType math_of(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }

// Raises as CPU does for ops that only have floating kernels.
void check_floating(const char* op, c10::ScalarType t);

// Stores value(operands) into dst: each input is loaded at dst's shape in the math dtype of
// dst's dtype; the value is rounded to dst's dtype once.
template <class Value>
void store_pointwise(const at::Tensor& dst, const std::vector<at::Tensor>& inputs, Value value) {
  const Shape shape = shape_of(dst.sizes());
  const DType math = math_of(to_loom(dst.scalar_type()));
  std::vector<NodeRef> v;
  for (const at::Tensor& t : inputs) v.push_back(operand(t, shape, math));
  assign(dst, value(v));
}

// The functional form: a new tensor laid out as `meta` (the op's result on meta tensors).
template <class Value>
at::Tensor pointwise_result(const at::Tensor& meta, const std::vector<at::Tensor>& inputs,
                            Value value) {
  EngineLock g(engine_mutex());
  at::Tensor out = result_like(meta);
  store_pointwise(out, inputs, value);
  return out;
}

// A new result laid out as `meta`, allocated under the engine lock.
inline at::Tensor locked_result(const at::Tensor& meta) {
  EngineLock g(engine_mutex());
  return result_like(meta);
}

// The in-place and out= forms, once the meta call has checked (and sized) dst.
template <class Value>
at::Tensor& pointwise_into(at::Tensor& dst, const std::vector<at::Tensor>& inputs, Value value) {
  EngineLock g(engine_mutex());
  store_pointwise(dst, inputs, value);
  return dst;
}

// Which dtypes the CPU's kernel for an op has code for (check_kernel_dtype).
enum Kinds : unsigned {
  kFloat = 1, kHalf = 2, kIntegral = 4, kBool = 8, kComplex = 16,
  kNoBFloat16 = 32  // with kFloat: float and double only
};

// Raises `"kernel" not implemented for 'T'` as the CPU does when its kernel for `t`'s
// kind is missing.
inline void check_kernel_dtype(const char* kernel, c10::ScalarType t, unsigned kinds) {
  bool ok;
  if (t == at::kHalf) ok = kinds & kHalf;
  else if (t == at::kBFloat16) ok = (kinds & kFloat) && !(kinds & kNoBFloat16);
  else if (at::isFloatingType(t)) ok = kinds & kFloat;
  else if (t == at::kBool) ok = kinds & kBool;
  else if (at::isComplexType(t)) ok = kinds & kComplex;
  else ok = kinds & kIntegral;
  TORCH_CHECK(ok, "\"", kernel, "\" not implemented for '", c10::toString(t), "'");
}

// An out= form's store, once the meta call has checked and sized `mo`: the CPU's dtype
// error for its kernel, out resized as the meta result, then the value stored.
template <class Value>
at::Tensor& checked_into(const char* kernel, unsigned kinds, at::Tensor& o, const at::Tensor& mo,
                         const std::vector<at::Tensor>& inputs, Value value) {
  check_kernel_dtype(kernel, mo.scalar_type(), kinds);
  match_out(o, mo);
  return pointwise_into(o, inputs, value);
}

// Functional, in-place and out= forms of a binary pointwise op whose meta function is
// `meta(a, b)` / `meta_out(a, b, out)`.
template <class Meta, class MetaOut, class Value>
struct Binary {
  const char* name;
  const char* kernel;
  unsigned kinds;
  Meta meta;
  MetaOut meta_out;
  Value value;

  at::Tensor functional(const at::Tensor& a, const at::Tensor& b) const {
    check_operands(name, {a, b});
    at::Tensor m = meta(to_meta(a), to_meta(b));
    check_kernel_dtype(kernel, m.scalar_type(), kinds);
    return pointwise_result(m, {a, b}, value);
  }
  at::Tensor& out(const at::Tensor& a, const at::Tensor& b, at::Tensor& o) const {
    check_operands(name, {a, b, o});
    at::Tensor ma = to_meta(a), mb = to_meta(b), mo = to_meta_out(o, a, ma, b, mb);
    meta_out(ma, mb, mo);
    return checked_into(kernel, kinds, o, mo, {a, b}, value);
  }
};

template <class Meta, class MetaOut, class Value>
Binary<Meta, MetaOut, Value> binary_op(const char* name, const char* kernel, unsigned kinds,
                                       Meta meta, MetaOut meta_out, Value value) {
  return {name, kernel, kinds, meta, meta_out, value};
}

// The same for a unary op: `meta(a)` / `meta_out(a, out)`.
template <class Meta, class MetaOut, class Value>
struct Unary {
  const char* name;
  const char* kernel;
  unsigned kinds;
  Meta meta;
  MetaOut meta_out;
  Value value;

  at::Tensor functional(const at::Tensor& a) const {
    check_operands(name, {a});
    at::Tensor m = meta(to_meta(a));
    check_kernel_dtype(kernel, m.scalar_type(), kinds);
    return pointwise_result(m, {a}, value);
  }
  at::Tensor& out(const at::Tensor& a, at::Tensor& o) const {
    check_operands(name, {a, o});
    at::Tensor ma = to_meta(a), mo = to_meta_out(o, a, ma);
    meta_out(ma, mo);
    return checked_into(kernel, kinds, o, mo, {a}, value);
  }
};

template <class Meta, class MetaOut, class Value>
Unary<Meta, MetaOut, Value> unary_op(const char* name, const char* kernel, unsigned kinds,
                                     Meta meta, MetaOut meta_out, Value value) {
  return {name, kernel, kinds, meta, meta_out, value};
}

namespace expr {

// A constant of `like`'s dtype and shape.
inline NodeRef lit(double v, const NodeRef& like) {
  return constant(Scalar::of_float(v), like->dtype, like->shape);
}

inline NodeRef operator+(const NodeRef& a, const NodeRef& b) { return binary(Op::Add, a, b); }
inline NodeRef operator-(const NodeRef& a, const NodeRef& b) { return binary(Op::Sub, a, b); }
inline NodeRef operator*(const NodeRef& a, const NodeRef& b) { return binary(Op::Mul, a, b); }
inline NodeRef operator/(const NodeRef& a, const NodeRef& b) { return binary(Op::Div, a, b); }
inline NodeRef operator+(const NodeRef& a, double b) { return a + lit(b, a); }
inline NodeRef operator-(const NodeRef& a, double b) { return a - lit(b, a); }
inline NodeRef operator*(const NodeRef& a, double b) { return a * lit(b, a); }
inline NodeRef operator/(const NodeRef& a, double b) { return a / lit(b, a); }
inline NodeRef operator+(double a, const NodeRef& b) { return lit(a, b) + b; }
inline NodeRef operator-(double a, const NodeRef& b) { return lit(a, b) - b; }
inline NodeRef operator*(double a, const NodeRef& b) { return lit(a, b) * b; }
inline NodeRef operator/(double a, const NodeRef& b) { return lit(a, b) / b; }
inline NodeRef operator-(const NodeRef& a) { return unary(Op::Neg, a); }

inline NodeRef exp(const NodeRef& a) { return unary(Op::Exp, a); }
inline NodeRef log(const NodeRef& a) { return unary(Op::Log, a); }
inline NodeRef log1p(const NodeRef& a) { return unary(Op::Log1p, a); }
inline NodeRef tanh(const NodeRef& a) { return unary(Op::Tanh, a); }
inline NodeRef erf(const NodeRef& a) { return unary(Op::Erf, a); }
// (1 + erf(x / sqrt 2)) / 2 to GELU's accuracy (NOTE [GELU's normal CDF]).
inline NodeRef normal_cdf(const NodeRef& a) { return unary(Op::NormalCdf, a); }
inline NodeRef abs(const NodeRef& a) { return unary(Op::Abs, a); }
inline NodeRef isnan(const NodeRef& a) { return unary(Op::IsNan, a); }
// NaN-propagating, as PyTorch's clamp and vectorized minimum/maximum.
inline NodeRef max(const NodeRef& a, const NodeRef& b) { return binary(Op::Maximum, a, b); }
inline NodeRef min(const NodeRef& a, const NodeRef& b) { return binary(Op::Minimum, a, b); }
inline NodeRef max(const NodeRef& a, double b) { return max(a, lit(b, a)); }
inline NodeRef min(const NodeRef& a, double b) { return min(a, lit(b, a)); }

// Comparisons are named: == and < on NodeRef compare pointers.
inline NodeRef lt(const NodeRef& a, const NodeRef& b) { return binary(Op::Lt, a, b); }
inline NodeRef le(const NodeRef& a, const NodeRef& b) { return binary(Op::Le, a, b); }
inline NodeRef gt(const NodeRef& a, const NodeRef& b) { return binary(Op::Gt, a, b); }
inline NodeRef ge(const NodeRef& a, const NodeRef& b) { return binary(Op::Ge, a, b); }
inline NodeRef eq(const NodeRef& a, const NodeRef& b) { return binary(Op::Eq, a, b); }
inline NodeRef lt(const NodeRef& a, double b) { return lt(a, lit(b, a)); }
inline NodeRef le(const NodeRef& a, double b) { return le(a, lit(b, a)); }
inline NodeRef gt(const NodeRef& a, double b) { return gt(a, lit(b, a)); }
inline NodeRef ge(const NodeRef& a, double b) { return ge(a, lit(b, a)); }
inline NodeRef eq(const NodeRef& a, double b) { return eq(a, lit(b, a)); }
inline NodeRef both(const NodeRef& a, const NodeRef& b) { return binary(Op::LogicalAnd, a, b); }
inline NodeRef either(const NodeRef& a, const NodeRef& b) { return binary(Op::LogicalOr, a, b); }
inline NodeRef select(const NodeRef& c, const NodeRef& a, const NodeRef& b) {
  return where(c, a, b);
}
inline NodeRef select(const NodeRef& c, const NodeRef& a, double b) {
  return where(c, a, lit(b, a));
}
inline NodeRef select(const NodeRef& c, double a, const NodeRef& b) {
  return where(c, lit(a, b), b);
}

}  // namespace expr

}  // namespace loom::aten
