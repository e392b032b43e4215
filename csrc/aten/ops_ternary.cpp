// Ternary elementwise ops (where, clamp, lerp, addcmul, addcdiv) and fill, in their
// functional, in-place and out= forms.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/elementwise.h"
#include "aten/op_util.h"
#include "aten/plain.h"

namespace loom::aten {

namespace {

using at::Tensor;

NodeRef where_value(const Tensor& c, const Tensor& a, const Tensor& b, const Shape& s, DType r) {
  return where(operand(c, s, DType::Bool), operand(a, s, r), operand(b, s, r));
}

void check_condition(const Tensor& c) {
  TORCH_CHECK(c.scalar_type() == at::kBool || c.scalar_type() == at::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              c.scalar_type());
  if (c.scalar_type() == at::kByte) {
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and "
                    "will be removed in a future version of PyTorch. Use a boolean condition "
                    "instead.");
  }
}

// The meta where keeps its inputs' odd strides of size-1 dims and does not resize a
// wrongly shaped out; the CPU's TensorIterator does both, so Loom lays results out as it.
Tensor where_meta(const Tensor& c, const Tensor& a, const Tensor& b) {
  // A byte condition is a bool one to the CPU (check_condition warned); PyTorch's meta
  // where (Python) refused it.
  Tensor mc = c.scalar_type() == at::kByte ? to_meta(c).to(at::kBool) : to_meta(c);
  return iterator_layout(at::where(mc, to_meta(a), to_meta(b)), c, a, b);
}

// where over plain operands (NOTE [Plain binary ops]; CPU 0-dim tensors count as numbers,
// as where_self_out takes them) gives a contiguous result of the values' promoted dtype at
// the broadcast shape, as the CPU's where lays it out. PyTorch's meta where is Python:
// 56 us of host time a call.
Tensor where_fn(const Tensor& c, const Tensor& a, const Tensor& b) {
  check_condition(c);
  auto value = [&](const Shape& s, DType r) { return where_value(c, a, b, s, r); };
  if (auto sizes = plain_sizes({&c, &a, &b}, /*cpu_scalars=*/true))
    return plain_functional(*sizes, promoted(a, b), value);
  return functional([&] { return where_meta(c, a, b); }, value);
}

Tensor& where_out(const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out) {
  check_condition(c);
  Tensor mo = to_meta(out);
  at::where_outf(to_meta(c), to_meta(a), to_meta(b), mo);  // the CPU's argument checks
  Tensor r = where_meta(c, a, b);
  if (out.sizes() != r.sizes() && at::native::resize_output(out, r.sizes()))
    out.as_strided_(r.sizes(), r.strides());
  return into(out, [&] { return r; },
              [&](const Shape& s, DType t) { return where_value(c, a, b, s, t); });
}

// clamp: max(x, lo) then min(., hi), both NaN-propagating.
NodeRef clamp_value(const Tensor& x, const c10::optional<Tensor>& lo,
                    const c10::optional<Tensor>& hi, const Shape& s, DType r) {
  // As CPU: clamp with both bounds has no Bool kernel; clamp_min / clamp_max do.
  bool both = lo.has_value() && lo->defined() && hi.has_value() && hi->defined();
  TORCH_CHECK(!(both && r == DType::Bool), "\"clamp\" not implemented for 'Bool'");
  NodeRef v = operand(x, s, r);
  if (lo.has_value() && lo->defined()) v = binary(Op::Maximum, v, operand(*lo, s, r));
  if (hi.has_value() && hi->defined()) v = binary(Op::Minimum, v, operand(*hi, s, r));
  return v;
}

c10::optional<Tensor> wrap_opt(const c10::optional<c10::Scalar>& s) {
  if (!s.has_value()) return c10::nullopt;
  return wrap(*s);
}

Tensor clamp_t_fn(const Tensor& x, const c10::optional<Tensor>& lo, const c10::optional<Tensor>& hi) {
  return functional([&] { return at::meta::clamp(to_meta(x), to_meta(lo), to_meta(hi)); },
                    [&](const Shape& s, DType r) { return clamp_value(x, lo, hi, s, r); });
}
Tensor& clamp_t_out(const Tensor& x, const c10::optional<Tensor>& lo,
                    const c10::optional<Tensor>& hi, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::clamp_outf(to_meta(x), to_meta(lo), to_meta(hi), mo);
  match_out(out, mo);
  return into(
      out, [&] { return at::meta::clamp(to_meta(x), to_meta(lo), to_meta(hi)); },
      [&](const Shape& s, DType r) { return clamp_value(x, lo, hi, s, r); });
}
Tensor& clamp_t_ip(Tensor& x, const c10::optional<Tensor>& lo, const c10::optional<Tensor>& hi) {
  Tensor mx = to_meta(x);
  Tensor r = at::meta::clamp(mx, to_meta(lo), to_meta(hi));
  at::meta::clamp_(mx, to_meta(lo), to_meta(hi));
  return into(x, [&] { return r; },
              [&](const Shape& s, DType t) { return clamp_value(x, lo, hi, s, t); });
}
Tensor clamp_fn(const Tensor& x, const c10::optional<c10::Scalar>& lo,
                const c10::optional<c10::Scalar>& hi) {
  Tensor meta = at::meta::clamp(to_meta(x), lo, hi);
  EngineLock g(engine_mutex());
  Tensor out = result_like(meta);
  assign(out, clamp_value(x, wrap_opt(lo), wrap_opt(hi), out_shape(out), dtype_of(meta)));
  return out;
}
Tensor& clamp_ip(Tensor& x, const c10::optional<c10::Scalar>& lo,
                 const c10::optional<c10::Scalar>& hi) {
  Tensor mx = to_meta(x);
  Tensor r = at::meta::clamp(mx, lo, hi);
  at::meta::clamp_(mx, lo, hi);
  return into(x, [&] { return r; }, [&](const Shape& s, DType t) {
    return clamp_value(x, wrap_opt(lo), wrap_opt(hi), s, t);
  });
}
Tensor& clamp_out(const Tensor& x, const c10::optional<c10::Scalar>& lo,
                  const c10::optional<c10::Scalar>& hi, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::clamp_outf(to_meta(x), lo, hi, mo);
  match_out(out, mo);
  return into(
      out, [&] { return at::meta::clamp(to_meta(x), lo, hi); },
      [&](const Shape& s, DType t) { return clamp_value(x, wrap_opt(lo), wrap_opt(hi), s, t); });
}

// Whether the CPU's kernels fuse a product into the sum that reads it for dtype `r`
// (float and double: their compiler formed fmas there; NOTE [No contraction] in
// codegen/render_c.cpp).
bool fused_products(DType r) { return r == DType::Float32 || r == DType::Float64; }

// lerp: eager's two-sided formula, exact at both ends, each side one fma where eager's is.
NodeRef lerp_value(const Tensor& a, const Tensor& b, const Tensor& w, const Shape& s, DType r) {
  NodeRef x = operand(a, s, r), y = operand(b, s, r), t = operand(w, s, r);
  NodeRef diff = binary(Op::Sub, y, x);
  NodeRef half = constant(Scalar::of_float(0.5), r, s), one = constant(Scalar::of_int(1), r, s);
  NodeRef rest = binary(Op::Sub, one, t);
  const bool fused = fused_products(r);
  NodeRef lo = fused ? mul_add(t, diff, x) : binary(Op::Add, x, binary(Op::Mul, t, diff));
  NodeRef hi = fused ? mul_add(unary(Op::Neg, diff), rest, y)
                     : binary(Op::Sub, y, binary(Op::Mul, diff, rest));
  NodeRef size = unary(Op::Abs, t);  // real for a complex weight
  NodeRef small = binary(Op::Lt, size, cast(half, size->dtype));
  return where(small, lo, hi);
}
// The CPU's verdict on lerp's dtype, after its meta checks (its kernels take floating and
// complex dtypes: integers raise, which Loom had computed).
void check_lerp_dtype(c10::ScalarType st, bool scalar_weight) {
  static const CpuVerdicts scalar_weights, tensor_weights;
  (scalar_weight ? scalar_weights : tensor_weights).check_beside_reduced_floats(st, [&] {
    const Tensor p = probe_operand(st);
    if (scalar_weight) at::lerp(p, p, 0.5);
    else at::lerp(p, p, p);
  });
}
Tensor lerp_t_fn(const Tensor& a, const Tensor& b, const Tensor& w) {
  return functional(
      [&] {
        Tensor m = at::meta::lerp(to_meta(a), to_meta(b), to_meta(w));
        check_lerp_dtype(m.scalar_type(), false);
        return m;
      },
      [&](const Shape& s, DType r) { return lerp_value(a, b, w, s, r); });
}
Tensor lerp_s_fn(const Tensor& a, const Tensor& b, const c10::Scalar& w) {
  return functional(
      [&] {
        Tensor m = at::meta::lerp(to_meta(a), to_meta(b), w);
        check_lerp_dtype(m.scalar_type(), true);
        return m;
      },
      [&](const Shape& s, DType r) { return lerp_value(a, b, wrap(w), s, r); });
}
Tensor& lerp_t_ip(Tensor& a, const Tensor& b, const Tensor& w) {
  Tensor ma = to_meta(a);
  Tensor r = at::meta::lerp(ma, to_meta(b), to_meta(w));
  at::meta::lerp_(ma, to_meta(b), to_meta(w));
  check_lerp_dtype(a.scalar_type(), false);
  return into(a, [&] { return r; }, [&](const Shape& s, DType t) { return lerp_value(a, b, w, s, t); });
}
Tensor& lerp_s_ip(Tensor& a, const Tensor& b, const c10::Scalar& w) {
  Tensor ma = to_meta(a);
  Tensor r = at::meta::lerp(ma, to_meta(b), w);
  at::meta::lerp_(ma, to_meta(b), w);
  check_lerp_dtype(a.scalar_type(), true);
  return into(a, [&] { return r; },
              [&](const Shape& s, DType t) { return lerp_value(a, b, wrap(w), s, t); });
}

Tensor& lerp_t_out(const Tensor& a, const Tensor& b, const Tensor& w, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::lerp_outf(to_meta(a), to_meta(b), to_meta(w), mo);
  check_lerp_dtype(mo.scalar_type(), false);
  match_out(out, mo);
  return into(
      out, [&] { return at::meta::lerp(to_meta(a), to_meta(b), to_meta(w)); },
      [&](const Shape& s, DType r) { return lerp_value(a, b, w, s, r); });
}
Tensor& lerp_s_out(const Tensor& a, const Tensor& b, const c10::Scalar& w, Tensor& out) {
  Tensor mo = to_meta(out);
  at::meta::lerp_outf(to_meta(a), to_meta(b), w, mo);
  check_lerp_dtype(mo.scalar_type(), true);
  match_out(out, mo);
  return into(
      out, [&] { return at::meta::lerp(to_meta(a), to_meta(b), w); },
      [&](const Shape& s, DType r) { return lerp_value(a, b, wrap(w), s, r); });
}

// addcmul / addcdiv: self + value * t1 (*|/) t2, associated as eager does (addcmul's
// last product fused with the sum where eager's is).
NodeRef addc_value(Op op, const Tensor& x, const Tensor& t1, const Tensor& t2,
                   const c10::Scalar& value, const Shape& s, DType r) {
  NodeRef prod = binary(Op::Mul, scalar_node(value, s, r), operand(t1, s, r));
  if (op == Op::Mul && fused_products(r)) return mul_add(prod, operand(t2, s, r), operand(x, s, r));
  return binary(Op::Add, operand(x, s, r), binary(op, prod, operand(t2, s, r)));
}
#define LOOM_ADDC(name, OP)                                                                     \
  Tensor name##_fn(const Tensor& x, const Tensor& t1, const Tensor& t2, const c10::Scalar& v) { \
    return functional(                                                                          \
        [&] { return at::meta::name(to_meta(x), to_meta(t1), to_meta(t2), v); },                \
        [&](const Shape& s, DType r) { return addc_value(Op::OP, x, t1, t2, v, s, r); });       \
  }                                                                                             \
  Tensor& name##_ip(Tensor& x, const Tensor& t1, const Tensor& t2, const c10::Scalar& v) {      \
    Tensor mx = to_meta(x);                                                                     \
    Tensor r = at::meta::name(mx, to_meta(t1), to_meta(t2), v);                                 \
    mx.name##_(to_meta(t1), to_meta(t2), v);                                                    \
    return into(                                                                                \
        x, [&] { return r; },                                                                   \
        [&](const Shape& s, DType t) { return addc_value(Op::OP, x, t1, t2, v, s, t); });       \
  }                                                                                             \
  Tensor& name##_out(const Tensor& x, const Tensor& t1, const Tensor& t2, const c10::Scalar& v, \
                     Tensor& out) {                                                             \
    Tensor mo = to_meta(out);                                                                   \
    at::meta::name##_outf(to_meta(x), to_meta(t1), to_meta(t2), v, mo);                         \
    match_out(out, mo);                                                                         \
    return into(                                                                                \
        out, [&] { return at::meta::name(to_meta(x), to_meta(t1), to_meta(t2), v); },           \
        [&](const Shape& s, DType t) { return addc_value(Op::OP, x, t1, t2, v, s, t); });       \
  }
LOOM_ADDC(addcmul, Mul)
LOOM_ADDC(addcdiv, Div)

// --- fill ---

Tensor& fill_scalar(Tensor& self, const c10::Scalar& v) {
  check_scalar_fits(v, self.scalar_type());
  EngineLock g(engine_mutex());
  assign(self, scalar_node(v, out_shape(self), dtype_of(self)));
  return self;
}
Tensor& fill_tensor(Tensor& self, const Tensor& v) {
  TORCH_CHECK(v.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              v.dim(), " dimensions.");
  if (v.is_complex() && !self.is_complex()) return fill_scalar(self, v.item());
  EngineLock g(engine_mutex());
  assign(self, operand(v, out_shape(self), dtype_of(self)));
  return self;
}
Tensor& zero_fn(Tensor& self) { return fill_scalar(self, 0); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("where.self", where_fn);
  m.impl("where.self_out", where_out);
  m.impl("clamp", clamp_fn);
  m.impl("clamp_", clamp_ip);
  m.impl("clamp.out", clamp_out);
  m.impl("clamp.Tensor", clamp_t_fn);
  m.impl("clamp_.Tensor", clamp_t_ip);
  m.impl("clamp.Tensor_out", clamp_t_out);
  m.impl("lerp.Tensor", lerp_t_fn);
  m.impl("lerp.Scalar", lerp_s_fn);
  m.impl("lerp_.Tensor", lerp_t_ip);
  m.impl("lerp_.Scalar", lerp_s_ip);
  m.impl("lerp.Tensor_out", lerp_t_out);
  m.impl("lerp.Scalar_out", lerp_s_out);
  m.impl("addcmul.out", addcmul_out);
  m.impl("addcdiv.out", addcdiv_out);
  m.impl("addcmul", addcmul_fn);
  m.impl("addcmul_", addcmul_ip);
  m.impl("addcdiv", addcdiv_fn);
  m.impl("addcdiv_", addcdiv_ip);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("zero_", zero_fn);
}

}  // namespace loom::aten
