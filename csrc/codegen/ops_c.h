// The C semantics of every elementwise op: one table used by every generated kernel.
#pragma once

#include <string>
#include <vector>

#include "core/node.h"

namespace loom {

// Helpers every kernel includes (reduced-float conversion, integer division, RNG).
const char* c_prelude();
// What kernels use of <stdint.h> and <math.h>, declared without parsing them.
const char* c_libc_decls();
// Loom's own float32 math (exp ...), branch-free so that loops calling it vectorize.
const char* c_math_prelude();
// sin, cos, tan and their inverses of float32, vectorizable (codegen/trig_c.cpp), for the
// kernels that use them.
const char* c_trig_prelude();
// log2, log10, exp2, expm1, sinh, cosh, asinh, acosh, atanh, fmod, remainder and floor
// division of float32 likewise (codegen/wide_math_c.cpp).
const char* c_wide_math_prelude();
// exp, expm1, tanh, sinh, cosh, log, log1p, atan, atan2, asin and acos of float64 likewise,
// and its fmod, remainder and floor division (codegen/double_math_c.cpp).
const char* c_double_math_prelude();
// sin, cos and tan of float64 likewise (codegen/double_trig_c.cpp): loom_sind_k(x, strict,
// &seen) and so on (NOTE [Double trig]).
const char* c_double_trig_prelude();
// Non-temporal block stores (NOTE [Streaming stores]), for the kernels that use them.
const char* c_stream_prelude();
// lgamma, digamma, trigamma and zeta, for the kernels that use them (kept out of the
// others' source).
const char* c_gamma_prelude();
// erfinv, ndtri, Bessel I0/I1, frexp, gcd and bfloat16 nextafter, likewise.
const char* c_special_prelude();
// The orthogonal polynomials of torch.special, for the kernels that use them.
const char* c_polynomial_prelude();
// Polynomial `kind` (PolynomialKind) of x and degree n, in float type `t`.
std::string c_polynomial(int kind, DType t, const std::string& x, const std::string& n);
// Bessel functions J0 ... K1e and Airy's Ai (codegen/bessel_c.cpp), for the kernels that use
// them; c_bessel: function `kind` (BesselKind) of x, computed in double, in float type `t`.
const char* c_bessel_prelude();
std::string c_bessel(int kind, DType t, const std::string& x);
// The regularized incomplete gamma functions (codegen/igamma_c.cpp), likewise: P(a, x), or
// Q(a, x) when `upper`, computed in double, in float type `t`.
const char* c_igamma_prelude();
std::string c_igamma(int upper, DType t, const std::string& a, const std::string& x);
// How the running torch's CPU kernels divide complex numbers and take their magnitudes (the
// binding sets it; defaults: torch 1.13's vectorized forms).
struct ComplexForms {
  // torch 2.x's c10::complex quotient (numpy's, scaled by the larger part of the divisor: no
  // overflow in c^2 + d^2; x / 0 is inf or NaN part by part), or 1.13's plain
  // (ac + bd, bc - ad) / (c^2 + d^2); 1 / z too (reciprocal, rsqrt, sigmoid).
  bool scaled_division = false;
  // |z| (and sgn's z / |z|) as hypot (2.x) or as sqrt(a^2 + b^2) (1.13's vectorized abs).
  bool hypot_abs = false;
};
void set_complex_forms(ComplexForms forms);
ComplexForms complex_forms();
// Expression for `op` on arguments of compute dtype `in`, giving dtype `out`.
std::string c_op(Op op, DType in, DType out, const std::vector<std::string>& a);
// sin, cos or tan of a float (compute dtype `in`): its function's _k form, whose argument
// reduction for large arguments runs only where `strict` (NOTE [Double trig]); `strict` and
// `loom_seen` are the kernel function's.
std::string c_trig_call(Op op, DType in, DType out, const std::string& a);
std::string c_cast(DType from, DType to, const std::string& a);
// Storage <-> compute conversions.
std::string c_load(DType t, const std::string& lvalue);
std::string c_store(DType t, const std::string& value);
std::string c_storage_type(DType t);
// Reductions: initial accumulator and the combine step.
std::string c_reduce_init(ReduceKind k, DType t);
std::string c_reduce_step(ReduceKind k, DType t, const std::string& acc, const std::string& v);
// The same step as a branch-free expression (the new accumulator), for vectorized lanes.
std::string c_reduce_combine(ReduceKind k, DType t, const std::string& acc, const std::string& v);

}  // namespace loom
