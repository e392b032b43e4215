// Pointwise formulas for activations and losses. Arithmetic on graph values reads as the
// formula it builds (`x * 0.5 * (1.0 + erf(x * M_SQRT1_2))` is the nested binary()/unary()
// calls), and the functional, in-place and out= forms of an op share one store.
#pragma once

#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>

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

// Which dtypes the CPU's kernel for an op has code for (check_kernel_dtype); NOTE [Dtypes
// of the running torch] is the way for pointwise ops and for most others (one CPU call per
// dtype); these tables (torch 1.13's, unchanged in 2.6) remain for prelu (1.13's kernel
// name) and segment_reduce.
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

// A meta tensor of `m`'s dtype laid out as `layout`: the result of a pointwise op as the
// CPU's TensorIterator lays it out, `layout` being a structured C++ op's meta result for the
// same operands (2.x's Python meta functions make some results contiguous).
inline at::Tensor laid_out_as(const at::Tensor& layout, const at::Tensor& m) {
  return at::empty_strided(layout.sizes(), layout.strides(), m.options());
}

// In place, self cannot be resized: TensorIterator's error, before its dtype checks.
inline void check_in_place_shape(const at::Tensor& o, const at::Tensor& self, const at::Tensor& m) {
  TORCH_CHECK(!self.is_same(o) || o.sizes() == m.sizes(), "output with shape ", o.sizes(),
              " doesn't match the broadcast shape ", m.sizes());
}

// The out= and in-place forms' store, once the meta calls have checked the arguments: an
// out of other sizes takes the layout of `m`, the functional result (TensorIterator lays out
// an output it resizes as a new result).
template <class Value>
at::Tensor& sized_into(at::Tensor& o, const at::Tensor& m, const std::vector<at::Tensor>& inputs,
                       Value value) {
  match_out(o, m);
  return pointwise_into(o, inputs, value);
}

// Functional, in-place and out= forms of a binary pointwise op whose functional form is
// `fn(a, b)` / `fn_out(a, b, out)` (called on meta tensors for the result's dtype and on
// CPU probes for the dtypes the op takes).
template <class Fn, class FnOut, class Value>
struct Binary {
  const char* name;
  Fn fn;
  FnOut fn_out;
  Value value;
  CpuVerdicts verdicts{};

  // The result on meta tensors: shapes checked, the CPU's verdict on the dtypes, the meta
  // call's checks, TensorIterator's layout (add's).
  at::Tensor checked_meta(const at::Tensor& a, const at::Tensor& b, const at::Tensor& ma,
                          const at::Tensor& mb) const {
    at::Tensor layout = at::meta::add(ma, mb);  // NOTE [C++ meta functions]
    verdicts.check(a.scalar_type(), b.scalar_type(), [&] { fn(probe_like(a), probe_like(b)); });
    return laid_out_as(layout, fn(ma, mb));
  }
  at::Tensor functional(const at::Tensor& a, const at::Tensor& b) const {
    check_operands(name, {a, b});
    return pointwise_result(checked_meta(a, b, to_meta(a), to_meta(b)), {a, b}, value);
  }
  at::Tensor& out(const at::Tensor& a, const at::Tensor& b, at::Tensor& o) const {
    check_operands(name, {a, b, o});
    at::Tensor ma = to_meta(a), mb = to_meta(b), m = checked_meta(a, b, ma, mb);
    check_in_place_shape(o, a, m);
    check_result_fits(m, o);
    at::Tensor mo = to_meta_out(o, a, ma, b, mb);
    fn_out(ma, mb, mo);  // the out= form's own checks
    return sized_into(o, m, {a, b}, value);
  }
};

template <class Fn, class FnOut, class Value>
Binary<Fn, FnOut, Value> binary_op(const char* name, Fn fn, FnOut fn_out, Value value) {
  return {name, fn, fn_out, value};
}

// The same for a unary op: `fn(a)` / `fn_out(a, out)`, laid out as sigmoid's result.
template <class Fn, class FnOut, class Value>
struct Unary {
  const char* name;
  Fn fn;
  FnOut fn_out;
  Value value;
  CpuVerdicts verdicts{};

  at::Tensor checked_meta(const at::Tensor& a, const at::Tensor& ma) const {
    verdicts.check(a.scalar_type(), [&] { fn(probe_like(a)); });
    return laid_out_as(at::meta::sigmoid(ma), fn(ma));
  }
  at::Tensor functional(const at::Tensor& a) const {
    check_operands(name, {a});
    return pointwise_result(checked_meta(a, to_meta(a)), {a}, value);
  }
  at::Tensor& out(const at::Tensor& a, at::Tensor& o) const {
    check_operands(name, {a, o});
    at::Tensor ma = to_meta(a), m = checked_meta(a, ma);
    check_result_fits(m, o);
    at::Tensor mo = to_meta_out(o, a, ma);
    fn_out(ma, mo);  // the out= form's own checks
    return sized_into(o, m, {a}, value);
  }
};

template <class Fn, class FnOut, class Value>
Unary<Fn, FnOut, Value> unary_op(const char* name, Fn fn, FnOut fn_out, Value value) {
  return {name, fn, fn_out, value};
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
