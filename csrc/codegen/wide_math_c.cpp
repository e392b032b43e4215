// log2, log10, exp2, expm1, sinh, cosh, asinh, acosh and atanh of float32 (and the reduced
// floats computed in it) for generated kernels, computed in double and rounded once:
// branch-free, so that loops over them vectorize (libm's float functions kept them
// scalar), with C's special cases. fmod, remainder and floor division of float32 likewise
// (NOTE [Float fmod]), and erfinv. Against the float64 function rounded to float, over
// all 2^32 inputs, by one ulp: log2 differs on 1 input, log10 on 2, asinh on 22, acosh on
// 4, atanh on 2, exp2, expm1, sinh and cosh on none (glibc's float functions on 0.3M to
// 620M).
#include "codegen/ops_c.h"

namespace loom {

const char* c_wide_math_prelude() {
  return R"(/* log(m) for x = m 2^e, m in [sqrt 1/2, sqrt 2), as 2 atanh(f / (2 + f)) with f = m - 1 by
   its series to s^15; e in *e. x positive and finite. */
static inline double loom_log_core(double x, double* e) {
  uint64_t b = loom_dbits(x);
  int64_t ex = (int64_t)(b >> 52) - 1023;
  double m = loom_bitsd((b & 0xfffffffffffffull) | 0x3ff0000000000000ull);
  int hi = m > 0x1.6a09e667f3bcdp+0;
  m = hi ? m * 0.5 : m;
  *e = (double)(ex + hi);
  double f = m - 1.0;
  double s = f / (2.0 + f), z = s * s;
  double p = LOOM_FMA(z, 0x1.1111111111111p-4, 0x1.3b13b13b13b14p-4);
  p = LOOM_FMA(z, p, 0x1.745d1745d1746p-4);
  p = LOOM_FMA(z, p, 0x1.c71c71c71c71cp-4);
  p = LOOM_FMA(z, p, 0x1.2492492492492p-3);
  p = LOOM_FMA(z, p, 0x1.999999999999ap-3);
  p = LOOM_FMA(z, p, 0x1.5555555555555p-2);
  return 2.0 * LOOM_FMA(s * z, p, s);
}
static inline float loom_log_special(float x, double v) {
  /* 0 gives -inf, negatives NaN, inf and NaN themselves. */
  return x == 0.0f ? -__builtin_inff() : x < 0.0f ? __builtin_nanf("") : __builtin_isfinite(x) ? (float)v : x;
}
static inline float loom_log2f(float x) {
  double e, l = loom_log_core(__builtin_fabs((double)x) + (x == 0.0f), &e);
  return loom_log_special(x, LOOM_FMA(l, 0x1.71547652b82fep+0, e));
}
static inline float loom_log10f(float x) {
  double e, l = loom_log_core(__builtin_fabs((double)x) + (x == 0.0f), &e);
  return loom_log_special(x, LOOM_FMA(l, 0x1.bcb7b1526e50dp-2, e * 0x1.34413509f79ffp-2));
}
/* e^r - 1 for |r| <= 0.35 by its series to r^13. */
static inline double loom_expm1_series(double r) {
  return LOOM_FMA(r * r, LOOM_FMA(r, loom_dexp_poly3(r), 0.5), r);
}
/* e^x - 1 for x in [-40, 90] in double: 2^n (1 + p) - 1 with x = n ln 2 + r, p = e^r - 1. */
static inline double loom_expm1_core(double x) {
  double n = __builtin_rint(x * 0x1.71547652b82fep+0);
  double r = LOOM_FMA(-n, 0x1.62e42fefa39efp-1, x);
  r = LOOM_FMA(-n, 0x1.abc9e3b39803fp-56, r);
  double p = loom_expm1_series(r);
  double s = loom_bitsd((uint64_t)((int64_t)n + 1023) << 52); /* 2^n */
  return LOOM_FMA(s, p, s - 1.0);
}
static inline float loom_expm1f(float x) {
  double d = x;
  d = d > 90.0 ? 90.0 : d;
  d = d < -40.0 ? -40.0 : d;
  float v = (float)loom_expm1_core(d);
  return x == 0.0f ? x : v;
}
static inline float loom_sinhf(float x) {
  double a = __builtin_fabs((double)x);
  a = a > 90.0 ? 90.0 : a;
  double e = loom_expm1_core(a);
  double v = 0.5 * (e + e / (e + 1.0));
  return (float)__builtin_copysign(v, (double)x);
}
static inline float loom_coshf(float x) {
  double a = __builtin_fabs((double)x);
  a = a > 90.0 ? 90.0 : a;
  double e = loom_expm1_core(a) + 1.0;
  return (float)(0.5 * (e + 1.0 / e));
}
/* 2^x for x in [-160, 130]: 2^n e^(f ln 2) with n = rint(x) and f = x - n exact. */
static inline float loom_exp2f(float x) {
  double d = x;
  d = d > 130.0 ? 130.0 : d;
  d = d < -160.0 ? -160.0 : d;
  d = d == d ? d : 0.0; /* NaN: kept out of the int conversion, returned at the end */
  double n = __builtin_rint(d);
  double p = 1.0 + loom_expm1_series((d - n) * 0x1.62e42fefa39efp-1);
  float v = (float)(p * loom_bitsd((uint64_t)((int64_t)n + 1023) << 52));
  return x == x ? v : x;
}
/* log(x) in double for x positive and finite. */
static inline double loom_log_wide(double x) {
  double e, l = loom_log_core(x, &e);
  return LOOM_FMA(e, 0x1.62e42fefa39efp-1, l);
}
/* asinh, acosh: log(x + sqrt(x^2 -+ 1)), log(2x) from 2^60 (x^2 would overflow); asinh by
   its series below 2^-10, where x + sqrt(x^2 + 1) rounds away x's low bits. atanh:
   log((1 + x) / (1 - x)) / 2, its series below 2^-10. */
static inline float loom_asinhf(float x) {
  double a = __builtin_fabs((double)x), z = a * a;
  double p = LOOM_FMA(z, -0x1.6db6db6db6db7p-5, 0x1.3333333333333p-4); /* -5/112, 3/40 */
  double small = LOOM_FMA(a * z, LOOM_FMA(z, p, -0x1.5555555555555p-3), a);
  int huge = a > 0x1p60;
  double big = loom_log_wide((huge ? a : a + __builtin_sqrt(z + 1.0)) + (a == 0.0)) +
               (huge ? 0x1.62e42fefa39efp-1 : 0.0);
  double v = a < 0x1p-10 ? small : big;
  return __builtin_isfinite(x) ? (float)__builtin_copysign(v, (double)x) : x;
}
static inline float loom_acoshf(float x) {
  double d = x;
  int in = d >= 1.0, huge = d > 0x1p60;
  double w = huge ? d : d + __builtin_sqrt(LOOM_FMA(d, d, -1.0));
  double v = loom_log_wide(in ? w : 1.0) + (huge ? 0x1.62e42fefa39efp-1 : 0.0);
  return in && __builtin_isfinite(x) ? (float)v : x == __builtin_inff() ? x : __builtin_nanf("");
}
static inline float loom_atanhf(float x) {
  double a = __builtin_fabs((double)x), z = a * a;
  double p = LOOM_FMA(z, 0x1.2492492492492p-3, 0x1.999999999999ap-3); /* 1/7, 1/5 */
  double small = LOOM_FMA(a * z, LOOM_FMA(z, p, 0x1.5555555555555p-2), a);
  double big = 0.5 * loom_log_wide(a < 1.0 ? (1.0 + a) / (1.0 - a) : 1.0);
  double v = a < 0x1p-10 ? small : big;
  v = a == 1.0 ? __builtin_inf() : v;
  return a <= 1.0 ? (float)__builtin_copysign(v, (double)x) : __builtin_nanf("");
}
/* erfinv of float32 in double: erfinv(x) = x g(w) with w = -log((1 - x)(1 + x)) (exact
   product), g a Chebyshev fit in w - 3.125 below w = 6.25 and in sqrt(w) - 3.25 above
   (a float's w stays below 16): relative error below 7e-11, branch-free. libm's erf and
   exp in Newton steps kept the old kernel scalar (36.6 ms over 1M floats, eager 22.2). */
static inline float loom_erfinvf(float x) {
  double d = x, a = __builtin_fabs(d);
  int in = a < 1.0;
  double w = -loom_log_wide(in ? (1.0 - a) * (1.0 + a) : 1.0);
  double t = w - 3.125, q = __builtin_sqrt(w) - 3.25;
  double ga = LOOM_FMA(t, 0x1.4128221be3ddbp-44, 0x1.69c30f6d8f5cep-40);
  ga = LOOM_FMA(t, ga, -0x1.04b81eb5653d2p-36);
  ga = LOOM_FMA(t, ga, -0x1.366cbde6d3391p-35);
  ga = LOOM_FMA(t, ga, 0x1.245ef6399d063p-30);
  ga = LOOM_FMA(t, ga, -0x1.240a35a24e77fp-28);
  ga = LOOM_FMA(t, ga, -0x1.f43a7b62da4b5p-26);
  ga = LOOM_FMA(t, ga, 0x1.c74927780f1eep-22);
  ga = LOOM_FMA(t, ga, -0x1.6e83f954c3c35p-20);
  ga = LOOM_FMA(t, ga, -0x1.d1db5f4ff426bp-17);
  ga = LOOM_FMA(t, ga, 0x1.879c1edf1c14bp-13);
  ga = LOOM_FMA(t, ga, -0x1.8457477542b7bp-11);
  ga = LOOM_FMA(t, ga, -0x1.8b6c32f9f3419p-8);
  ga = LOOM_FMA(t, ga, 0x1.ebd80d92401afp-3);
  ga = LOOM_FMA(t, ga, 0x1.a755e7c99ae86p+0);
  double gb = LOOM_FMA(q, 0x1.56d8565239597p-18, 0x1.6683f82906d50p-18);
  gb = LOOM_FMA(q, gb, -0x1.98c022054aefap-15);
  gb = LOOM_FMA(q, gb, 0x1.332b66806de4fp-14);
  gb = LOOM_FMA(q, gb, 0x1.9aceeadeccf41p-16);
  gb = LOOM_FMA(q, gb, -0x1.7605dd30ec2d7p-12);
  gb = LOOM_FMA(q, gb, 0x1.f3c28f2757b97p-11);
  gb = LOOM_FMA(q, gb, -0x1.ba801288013f5p-10);
  gb = LOOM_FMA(q, gb, 0x1.468f180cbda6ap-9);
  gb = LOOM_FMA(q, gb, -0x1.ebae4ef8280a5p-9);
  gb = LOOM_FMA(q, gb, 0x1.5ffcfdec73139p-8);
  gb = LOOM_FMA(q, gb, 0x1.0158a6d7e5328p+0);
  gb = LOOM_FMA(q, gb, 0x1.8abcc380d5a48p+1);
  double v = d * (w < 6.25 ? ga : gb);
  return in ? (float)v : a == 1.0 ? __builtin_copysignf(__builtin_inff(), x) : __builtin_nanf("");
}
/* NOTE [Float fmod]: fmod of floats is exact, and libm's fmodf (a bit loop) kept every
   kernel over it scalar: remainder over 1M floats took 7.3 ms against eager's 1.5. Here
   |a| mod |b| is computed in double, branch-free: a step divides r by b 2^k, k chosen so
   the quotient is below 2^50, truncates r / (b 2^k) from a reciprocal rounded low enough
   that it never overestimates (so the quotient is right or one short), and takes
   r - q b 2^k exactly with one fma (the true value is a multiple of b's last place below
   2 b 2^k), then subtracts b 2^k once if r is still above it. Each step removes up to 50
   bits of the exponent gap; six cover the widest two floats have (276 bits, a float near
   2^128 by the least subnormal), and once the gap is closed a step changes nothing. A
   lane cannot leave the loop early, so six steps cost every element (2.0 ms over 1M
   floats, eager 1.4-1.5); a kernel that may rerun (NOTE [Deferred checks]) takes one step
   and records a quotient of 2^50 or more like a failed check, for its strict run to take
   all six (0.6 ms). libm's results over 10^8 pairs (random bits, near exponents, small
   integers) are matched bit for bit. Without hardware fma the product would round, so
   libm's fmodf is kept there. */
#ifdef __FMA__
static inline __attribute__((always_inline)) float loom_fmodf_k(float a, float b, const int strict,
                                                                int* seen) {
  double A = __builtin_fabs((double)a), B = __builtin_fabs((double)b);
  int bad = !(A <= 0x1p128) || !(B > 0.0); /* a infinite or NaN, b zero or NaN: NaN */
  int big = B > 0x1p128;                    /* b infinite: a */
  B = bad | big ? 1.0 : B;
  A = bad ? 0.0 : A;
  double inv = (1.0 / B) * (1.0 - 0x1p-51);
  uint64_t bb = loom_dbits(B), ib = loom_dbits(inv);
  int64_t eb = (int64_t)(bb >> 52) + 50;
  double r = A;
  for (int i = 0; i < (strict ? 6 : 1); ++i) {
    int64_t k = (int64_t)(loom_dbits(r) >> 52) - eb;
    uint64_t kk = (uint64_t)(k < 0 ? 0 : k) << 52; /* b 2^k, 2^-k / b by their exponents */
    double bk = loom_bitsd(bb + kk);
    double q = __builtin_trunc(r * loom_bitsd(ib - kk));
    r = LOOM_FMA(-q, bk, r);
    r = r >= bk ? r - bk : r;
  }
  *seen |= r >= B; /* not reduced yet: left to the strict run */
  float m = __builtin_copysignf((float)r, a);
  return bad ? __builtin_nanf("") : big ? a : m;
}
#else
#define loom_fmodf_k(a, b, strict, seen) fmodf(a, b)
#endif
LOOM_FLOAT_DIV_FORMS(float, f32, loom_fmodf_k, __builtin_floorf, __builtin_copysignf)
)";
}

}  // namespace loom
