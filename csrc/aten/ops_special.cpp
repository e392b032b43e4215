// Pointwise ops with formulas of their own (logaddexp, logaddexp2, hypot, heaviside,
// fmax/fmin, sinc, logit and its backward, round with decimals, polygamma) and
// linalg_cross. Each formula follows the CPU kernel of torch 1.13 (its vectorized
// path where the scalar one differs), and each op raises the CPU's error for the dtypes
// that kernel has no code for.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <torch/library.h>

#include <cmath>

#include "aten/pointwise.h"

namespace loom::aten {

namespace {

using at::Tensor;
using V = std::vector<NodeRef>;
using namespace expr;

// log(exp(a) + exp(b)) and log2(2^a + 2^b): the larger plus the log of one plus the other's
// share; equal infinities give themselves. Complex operands (torch 2.x's CPU takes them for
// logaddexp) shift by the larger real part, with infinities of their own (Op::LogAddExp).
NodeRef log_add_exp(const NodeRef& a, const NodeRef& b, bool base2) {
  if (is_complex(a->dtype) && !base2) return binary(Op::LogAddExp, a, b);
  NodeRef share = -abs(a - b);
  NodeRef r = max(a, b) + (base2 ? unary(Op::Log2, 1.0 + unary(Op::Exp2, share))
                                 : log(1.0 + exp(share)));
  return select(both(eq(a, b), unary(Op::IsInf, a)), a, r);
}

// sqrt(a^2 + b^2) without overflow in the squares; an infinite side wins over NaN.
NodeRef hypot(const NodeRef& a, const NodeRef& b) {
  NodeRef x = abs(a), y = abs(b);
  NodeRef hi = max(x, y), lo = min(x, y);
  NodeRef q = lo / hi;
  NodeRef r = select(eq(hi, 0.0), 0.0, hi * unary(Op::Sqrt, 1.0 + q * q));
  return select(either(unary(Op::IsInf, a), unary(Op::IsInf, b)), lit(INFINITY, r), r);
}

// The larger (smaller) of two, a NaN losing to a number.
NodeRef fmax_fmin(const NodeRef& a, const NodeRef& b, bool larger) {
  NodeRef m = larger ? max(a, b) : min(a, b);
  if (!is_floating(a->dtype)) return m;
  return select(isnan(a), b, select(isnan(b), a, m));
}

const auto kLogaddexp = binary_op(
    "logaddexp", [](const Tensor& a, const Tensor& b) { return at::logaddexp(a, b); },
    [](const Tensor& a, const Tensor& b, Tensor& o) { at::logaddexp_outf(a, b, o); },
    [](const V& v) { return log_add_exp(v[0], v[1], false); });
const auto kLogaddexp2 = binary_op(
    "logaddexp2", [](const Tensor& a, const Tensor& b) { return at::logaddexp2(a, b); },
    [](const Tensor& a, const Tensor& b, Tensor& o) { at::logaddexp2_outf(a, b, o); },
    [](const V& v) { return log_add_exp(v[0], v[1], true); });
const auto kHypot = binary_op(
    "hypot", [](const Tensor& a, const Tensor& b) { return at::hypot(a, b); },
    [](const Tensor& a, const Tensor& b, Tensor& o) { at::hypot_outf(a, b, o); },
    [](const V& v) { return hypot(v[0], v[1]); });
const auto kHeaviside = binary_op(
    "heaviside", [](const Tensor& a, const Tensor& b) { return at::heaviside(a, b); },
    [](const Tensor& a, const Tensor& b, Tensor& o) { at::heaviside_outf(a, b, o); },
    [](const V& v) { return select(eq(v[0], 0.0), v[1], select(gt(v[0], 0.0), 1.0, lit(0.0, v[1]))); });
const auto kFmax = binary_op(
    "fmax", [](const Tensor& a, const Tensor& b) { return at::fmax(a, b); },
    [](const Tensor& a, const Tensor& b, Tensor& o) { at::fmax_outf(a, b, o); },
    [](const V& v) { return fmax_fmin(v[0], v[1], true); });
const auto kFmin = binary_op(
    "fmin", [](const Tensor& a, const Tensor& b) { return at::fmin(a, b); },
    [](const Tensor& a, const Tensor& b, Tensor& o) { at::fmin_outf(a, b, o); },
    [](const V& v) { return fmax_fmin(v[0], v[1], false); });

#define LOOM_BINARY_FORMS(name, op)                                                   \
  Tensor name##_fn(const Tensor& a, const Tensor& b) { return op.functional(a, b); } \
  Tensor& name##_into(const Tensor& a, const Tensor& b, Tensor& o) { return op.out(a, b, o); }
LOOM_BINARY_FORMS(logaddexp, kLogaddexp)
LOOM_BINARY_FORMS(logaddexp2, kLogaddexp2)
LOOM_BINARY_FORMS(hypot, kHypot)
LOOM_BINARY_FORMS(heaviside, kHeaviside)
LOOM_BINARY_FORMS(fmax, kFmax)
LOOM_BINARY_FORMS(fmin, kFmin)
// Only these two have in-place forms.
Tensor& hypot_ip(Tensor& a, const Tensor& b) { return kHypot.out(a, b, a); }
Tensor& heaviside_ip(Tensor& a, const Tensor& b) { return kHeaviside.out(a, b, a); }

// --- sinc ---

NodeRef sinc(const NodeRef& x) {
  NodeRef p = x * M_PI;
  return select(eq(x, 0.0), lit(1.0, x), unary(Op::Sin, p) / p);
}

const auto kSinc = unary_op(
    "sinc", [](const Tensor& a) { return at::sinc(a); },
    [](const Tensor& a, Tensor& o) { at::sinc_outf(a, o); }, [](const V& v) { return sinc(v[0]); });
Tensor sinc_fn(const Tensor& self) { return kSinc.functional(self); }
Tensor& sinc_into(const Tensor& self, Tensor& out) { return kSinc.out(self, out); }
Tensor& sinc_ip(Tensor& self) { return sinc_into(self, self); }

// --- logit: log(z / (1 - z)), z clamped to [eps, 1 - eps] when eps is given ---

// The running torch's verdict on logit's dtype (NOTE [Dtypes of the running torch]),
// before the meta call, whose decomposition would raise another error for complex inputs.
void check_logit_dtype(const Tensor& self) {
  static const CpuVerdicts verdicts;
  const c10::ScalarType t = self.scalar_type();
  verdicts.check(t, [&] { at::logit(probe_operand(t)); });
}
void check_logit_backward_dtype(const Tensor& dy, const Tensor& self) {
  static const CpuVerdicts verdicts;
  const c10::ScalarType t = at::promote_types(dy.scalar_type(), self.scalar_type());
  verdicts.check(t, [&] {
    at::logit_backward(probe_operand(dy.scalar_type()), probe_operand(self.scalar_type()));
  });
}

// eps and 1 - eps as the CPU's kernel holds them, in the tensor's dtype `t`, at x's.
std::pair<NodeRef, NodeRef> logit_bounds(double eps, DType t, const NodeRef& x) {
  NodeRef e = constant(Scalar::of_float(eps), t, x->shape);
  NodeRef one = constant(Scalar::of_float(1), t, x->shape);
  return {cast(e, x->dtype), cast(binary(Op::Sub, one, e), x->dtype)};
}

NodeRef logit(const NodeRef& x, c10::optional<double> eps, DType t) {
  NodeRef z = x;
  if (eps && *eps >= 0) {
    auto [lo, hi] = logit_bounds(*eps, t, x);
    z = select(lt(x, lo), lo, select(gt(x, hi), hi, x));
  }
  return log(z / (1.0 - z));
}

Tensor logit_fn(const Tensor& self, c10::optional<double> eps) {
  check_operands("logit", {self});
  check_logit_dtype(self);
  // logit is a float unary TensorIterator on the CPU, as sigmoid is: sigmoid's meta
  // function lays out its result (PyTorch's meta logit is Python).
  Tensor m = at::meta::sigmoid(to_meta(self));
  const DType t = to_loom(m.scalar_type());
  return pointwise_result(m, {self}, [&](const V& v) { return logit(v[0], eps, t); });
}
Tensor& logit_into(const Tensor& self, c10::optional<double> eps, Tensor& out) {
  check_operands("logit", {self, out});
  check_logit_dtype(self);
  Tensor ms = to_meta(self);
  check_result_fits(at::meta::sigmoid(ms), out);
  Tensor mo = to_meta_out(out, self, ms);
  at::meta::sigmoid_outf(ms, mo);  // logit.out's checks and resizing (its meta is Python)
  match_out(out, mo);
  const DType t = to_loom(mo.scalar_type());
  return pointwise_into(out, {self}, [&](const V& v) { return logit(v[0], eps, t); });
}
Tensor& logit_ip(Tensor& self, c10::optional<double> eps) { return logit_into(self, eps, self); }

// dy / (x (1 - x)) inside [0, 1] (NaN outside), or inside [eps, 1 - eps] (0 outside).
NodeRef logit_grad(const NodeRef& dy, const NodeRef& x, c10::optional<double> eps, DType t) {
  NodeRef g = dy / (x * (1.0 - x));
  if (!eps || *eps < 0) return select(both(ge(x, 0.0), le(x, 1.0)), g, lit(NAN, g));
  auto [lo, hi] = logit_bounds(*eps, t, x);
  return select(both(ge(x, lo), le(x, hi)), g, lit(0.0, g));
}

Tensor& logit_backward_into(const Tensor& dy, const Tensor& self, c10::optional<double> eps,
                           Tensor& out) {
  check_operands("logit_backward", {dy, self, out});
  check_logit_backward_dtype(dy, self);
  Tensor md = to_meta(dy), ms = to_meta(self), mo = to_meta_out(out, dy, md, self, ms);
  at::meta::logit_backward_outf(md, ms, eps, mo);
  match_out(out, mo);
  const DType t = to_loom(mo.scalar_type());
  return pointwise_into(out, {dy, self}, [&](const V& v) { return logit_grad(v[0], v[1], eps, t); });
}
Tensor logit_backward_fn(const Tensor& dy, const Tensor& self, c10::optional<double> eps) {
  check_operands("logit_backward", {dy, self});
  check_logit_backward_dtype(dy, self);
  Tensor m = at::meta::logit_backward(to_meta(dy), to_meta(self), eps);
  const DType t = to_loom(m.scalar_type());
  return pointwise_result(m, {dy, self}, [&](const V& v) { return logit_grad(v[0], v[1], eps, t); });
}

// --- round to a number of decimals: nearbyint(x * 10^d) / 10^d, or for d < 0
// nearbyint(x / 10^-d) * 10^-d, with the power in the tensor's dtype ---

NodeRef round_decimals(const NodeRef& x, int64_t decimals, DType t) {
  const bool neg = decimals < 0;
  const double p = std::pow(10.0, double(neg ? -decimals : decimals));
  NodeRef ten = cast(constant(Scalar::of_float(p), t, x->shape), x->dtype);
  return neg ? unary(Op::Round, x / ten) * ten : unary(Op::Round, x * ten) / ten;
}

void check_round_dtype(const Tensor& self, int64_t decimals) {
  static const CpuVerdicts verdicts;
  const c10::ScalarType t = self.scalar_type();
  verdicts.check(t, [&] { at::round(probe_operand(t), decimals); });
}

Tensor& round_decimals_into(const Tensor& self, int64_t decimals, Tensor& out) {
  check_operands("round", {self, out});
  check_round_dtype(self, decimals);
  Tensor ms = to_meta(self);
  check_result_fits(at::meta::round(ms, decimals), out);
  Tensor mo = to_meta_out(out, self, ms);
  at::meta::round_outf(ms, decimals, mo);
  match_out(out, mo);
  const DType t = to_loom(mo.scalar_type());
  return pointwise_into(out, {self}, [&](const V& v) { return round_decimals(v[0], decimals, t); });
}
Tensor round_decimals_fn(const Tensor& self, int64_t decimals) {
  check_operands("round", {self});
  check_round_dtype(self, decimals);
  Tensor m = at::meta::round(to_meta(self), decimals);
  const DType t = to_loom(m.scalar_type());
  return pointwise_result(m, {self}, [&](const V& v) { return round_decimals(v[0], decimals, t); });
}
Tensor& round_decimals_ip(Tensor& self, int64_t decimals) {
  return round_decimals_into(self, decimals, self);
}

// --- polygamma(n, x): digamma for n = 0, trigamma for n = 1, else (-1)^(n+1) n!
// zeta(n + 1, x), n! as exp(lgamma(n + 1)) in the tensor's dtype, as the CPU computes it ---

// The running torch's verdict on the dtype (probed with n, whose kernel names the error).
void check_polygamma_dtype(int64_t n, const Tensor& self) {
  static const CpuVerdicts verdicts;
  const c10::ScalarType t = self.scalar_type();
  verdicts.check(t, [&] { at::polygamma(n, probe_operand(t)); });
}

NodeRef polygamma(int64_t n, const NodeRef& x, DType t) {
  if (n == 0) return unary(Op::Digamma, x);
  if (n == 1) return unary(Op::Trigamma, x);
  const double factorial = t == DType::Float64 ? std::exp(std::lgamma(double(n) + 1))
                                               : double(std::exp(std::lgamma(float(n) + 1.0f)));
  NodeRef s = constant(Scalar::of_float(double(n + 1)), x->dtype, x->shape);
  NodeRef zeta = binary(Op::Zeta, s, x);
  if (is_reduced_float(t)) zeta = cast(cast(zeta, t), x->dtype);  // the CPU rounds it first
  return lit(n % 2 ? factorial : -factorial, x) * zeta;
}

Tensor& polygamma_into(int64_t n, const Tensor& self, Tensor& out) {
  check_operands("polygamma", {self, out});
  check_polygamma_dtype(n, self);
  Tensor ms = to_meta(self);
  check_result_fits(at::polygamma(n, ms), out);
  Tensor mo = to_meta_out(out, self, ms);
  at::meta::polygamma_outf(n, ms, mo);
  match_out(out, mo);
  const DType t = to_loom(mo.scalar_type());
  return pointwise_into(out, {self}, [&](const V& v) { return polygamma(n, v[0], t); });
}
Tensor polygamma_fn(int64_t n, const Tensor& self) {
  check_operands("polygamma", {self});
  check_polygamma_dtype(n, self);
  Tensor m = at::polygamma(n, to_meta(self));
  const DType t = to_loom(m.scalar_type());
  return pointwise_result(m, {self}, [&](const V& v) { return polygamma(n, v[0], t); });
}
Tensor& polygamma_ip(Tensor& self, int64_t n) { return polygamma_into(n, self, self); }

// --- linalg_cross: r_i = a_(i+1) b_(i+2) - a_(i+2) b_(i+1) along dim, indices mod 3 ---

Tensor& linalg_cross_into(const Tensor& self, const Tensor& other, int64_t dim, Tensor& out) {
  check_operands("linalg_cross", {self, other, out});
  Tensor ms = to_meta(self), mt = to_meta(other), mo = to_meta_out(out, self, ms, other, mt);
  at::meta::linalg_cross_outf(ms, mt, dim, mo);
  // which dtypes the CPU's kernel takes is the running torch's (2.x's takes float16)
  static const CpuVerdicts verdicts;
  verdicts.check(mo.scalar_type(), [&] {
    const Tensor p = at::ones({3}, at::TensorOptions().dtype(mo.scalar_type()));
    at::linalg_cross(p, p);
  });
  TORCH_CHECK(other.scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", other.scalar_type());
  match_out(out, mo);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  Tensor a = self.expand(out.sizes()), b = other.expand(out.sizes());
  Tensor r = a.roll(-1, dim) * b.roll(-2, dim) - a.roll(-2, dim) * b.roll(-1, dim);
  EngineLock g(engine_mutex());
  assign(out, read_tensor(r));
  return out;
}
Tensor linalg_cross_fn(const Tensor& self, const Tensor& other, int64_t dim) {
  check_operands("linalg_cross", {self, other});
  Tensor m = at::meta::linalg_cross(to_meta(self), to_meta(other), dim);
  Tensor out = locked_result(m);
  return linalg_cross_into(self, other, dim, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("logaddexp", logaddexp_fn);
  m.impl("logaddexp.out", logaddexp_into);
  m.impl("logaddexp2", logaddexp2_fn);
  m.impl("logaddexp2.out", logaddexp2_into);
  m.impl("hypot", hypot_fn);
  m.impl("hypot_", hypot_ip);
  m.impl("hypot.out", hypot_into);
  m.impl("heaviside", heaviside_fn);
  m.impl("heaviside_", heaviside_ip);
  m.impl("heaviside.out", heaviside_into);
  m.impl("fmax", fmax_fn);
  m.impl("fmax.out", fmax_into);
  m.impl("fmin", fmin_fn);
  m.impl("fmin.out", fmin_into);
  m.impl("sinc", sinc_fn);
  m.impl("sinc_", sinc_ip);
  m.impl("sinc.out", sinc_into);
  m.impl("logit", logit_fn);
  m.impl("logit_", logit_ip);
  m.impl("logit.out", logit_into);
  m.impl("logit_backward", logit_backward_fn);
  m.impl("logit_backward.grad_input", logit_backward_into);
  m.impl("round.decimals", round_decimals_fn);
  m.impl("round_.decimals", round_decimals_ip);
  m.impl("round.decimals_out", round_decimals_into);
  m.impl("polygamma", polygamma_fn);
  m.impl("polygamma.out", polygamma_into);
  m.impl("polygamma_", polygamma_ip);
  m.impl("linalg_cross", linalg_cross_fn);
  m.impl("linalg_cross.out", linalg_cross_into);
}

}  // namespace loom::aten
