// The C source of Loom's special functions (the gamma family, the inverse error functions,
// the normal quantile, erfcx, Bessel I0/I1, frexp, gcd, bfloat16 nextafter), included only
// by the kernels that use them (render_c.cpp decides), so that other kernels compile as
// fast as before.
#include "codegen/ops_c.h"

namespace loom {

const char* c_gamma_prelude() {
  return R"(/* lgamma without the global sign that lgamma writes (kernels run on several threads). */
float lgammaf_r(float, int*); double lgamma_r(double, int*);
static inline float loom_lgammaf(float x) { int s; return lgammaf_r(x, &s); }
static inline double loom_lgamma(double x) { int s; return lgamma_r(x, &s); }
/* digamma, as the CPU computes it: psi(x) = psi(x + 1) - 1 / x lifts x to 10 or more and
   the asymptotic series log x - 1 / 2x - sum of B_2k / (2k x^2k), k = 1..7, ends it; a
   negative x reflects to psi(1 - x) - pi / tan(pi r), r the fractional part of x, with the
   reflection in double. */
#define LOOM_DIGAMMA(name, T, S)                                                          \
  static T name(T x) {                                                                    \
    if (x == 0) return 1 / x < 0 ? (T)__builtin_inf() : -(T)__builtin_inf();             \
    T reflect = 0;                                                                        \
    if (x < 0) {                                                                          \
      if (x == trunc##S(x)) return (T)__builtin_nan("");                                  \
      const double pi = 3.14159265358979323846;                                           \
      reflect = (T)(pi / tan(pi * (double)(x - trunc##S(x))));                            \
      x = 1 - x;                                                                          \
    }                                                                                     \
    T acc = 0;                                                                            \
    while (x < 10) {                                                                      \
      acc -= 1 / x;                                                                       \
      x += 1;                                                                             \
    }                                                                                     \
    if (x == 10) return acc + (T)2.25175258906672110764 - reflect;                        \
    T s = 0;                                                                              \
    if (x < (T)1e17) {                                                                    \
      T z = 1 / (x * x);                                                                  \
      s = z * ((T)(1.0 / 12) + z * ((T)(-1.0 / 120) + z * ((T)(1.0 / 252) +             \
          z * ((T)(-1.0 / 240) + z * ((T)(1.0 / 132) + z * ((T)(-691.0 / 32760) +        \
          z * (T)(1.0 / 12)))))));                                                        \
    }                                                                                     \
    return acc + log##S(x) - (T)0.5 / x - s - reflect;                                    \
  }
LOOM_DIGAMMA(loom_digammaf, float, f)
LOOM_DIGAMMA(loom_digamma, double, )
/* trigamma, as the CPU computes it: below 1/2 the reflection pi^2 / sin^2(pi x) -
   psi1(1 - x), six steps of psi1(x) = psi1(x + 1) + 1 / x^2, then the asymptotic series
   (1 + 1/2x + 1/6x^2 - 1/30x^4 + 1/42x^6) / x. */
#define LOOM_TRIGAMMA(name, T, S)                                                         \
  static T name(T x) {                                                                    \
    T sign = 1, r = 0;                                                                    \
    if (x < (T)0.5) {                                                                     \
      const T pi = (T)3.14159265358979323846;                                             \
      const T s = sin##S(pi * x);                                                         \
      sign = -1;                                                                          \
      r -= pi * pi / (s * s);                                                             \
      x = 1 - x;                                                                          \
    }                                                                                     \
    for (int i = 0; i < 6; ++i) {                                                         \
      r += 1 / (x * x);                                                                   \
      x += 1;                                                                             \
    }                                                                                     \
    const T ixx = 1 / (x * x);                                                            \
    r += (1 + 1 / (2 * x) +                                                               \
          ixx * ((T)1 / 6 - ixx * ((T)1 / 30 - ixx * ((T)1 / 42)))) / x;                  \
    return sign * r;                                                                      \
  }
LOOM_TRIGAMMA(loom_trigammaf, float, f)
LOOM_TRIGAMMA(loom_trigamma, double, )
/* The Hurwitz zeta function sum over k >= 0 of (q + k)^-x, in double as the CPU computes
   it: terms summed until q + k passes 9 (and at least nine of them), then the
   Euler-Maclaurin tail with the Bernoulli numbers B2..B24, each step stopping once a term
   no longer changes the sum in double. */
static double loom_zeta(double x, double q) {
  /* (2j)! / B_2j, j = 1..12 */
  static const double fb[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
      -1307674368000.0 / 691, 74724249600.0, -10670622842880000.0 / 3617,
      5109094217170944000.0 / 43867, -802857662698291200000.0 / 174611,
      155112100433309859840000.0 / 854513, -1693824136731743669452800000.0 / 236364091};
  const double eps = 1.11022302462515654042e-16;
  if (x == 1) return __builtin_inf();
  if (x < 1) return __builtin_nan("");
  if (q <= 0) {
    if (q == floor(q)) return __builtin_inf();
    if (x != floor(x)) return __builtin_nan("");
  }
  double s = pow(q, -x), a = q, b = 0;
  for (int i = 0; i < 9 || a <= 9.0; ++i) {
    a += 1;
    b = pow(a, -x);
    s += b;
    if (-eps * s < b && b < eps * s) return s;
  }
  const double w = a;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  double f = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    f *= x + k;
    b /= w;
    const double t = f * b / fb[j];
    s += t;
    if (fabs(t / s) < eps) return s;
    k += 1;
    f *= x + k;
    b /= w;
    k += 1;
  }
  return s;
}
)";
}

const char* c_special_prelude() {
  return R"(/* Inverse error functions, the normal quantile, modified Bessel functions I0 and I1,
   frexp's two parts, gcd and bfloat16's nextafter. Each float32 value is computed in
   double and rounded once. */
/* z >= 0 with erfc(z) = q, 0 < q <= 1: Winitzki's closed form for erf^-1(1 - q), with
   1 - (1 - q)^2 as q (2 - q), starts three Halley steps on erfc(z) - q (f''/f' = -2z). */
static double loom_erfcinv_pos(double q) {
  const double a = 0.147, c = 2 / (3.14159265358979323846 * a);
  const double l = log(q * (2 - q)), b = c + 0.5 * l;
  double z = sqrt(sqrt(b * b - l / a) - b);
  for (int i = 0; i < 3; ++i) {
    const double u = (erfc(z) - q) / (-1.12837916709551257390 * exp(-z * z));
    z -= u / (1 + z * u);
  }
  return z;
}
/* erf^-1(y) for |y| <= 1/2, the same way on erf(x) - y. */
static double loom_erfinv_mid(double y) {
  const double a = 0.147, c = 2 / (3.14159265358979323846 * a), ay = fabs(y);
  const double l = log((1 - ay) * (1 + ay)), b = c + 0.5 * l;
  double x = sqrt(sqrt(b * b - l / a) - b);
  for (int i = 0; i < 3; ++i) {
    const double u = (erf(x) - ay) / (1.12837916709551257390 * exp(-x * x));
    x -= u / (1 + x * u);
  }
  return copysign(x, y);
}
/* Beyond 1/2 the tail, 1 - |y| (exact there), goes through erfc, which keeps its digits. */
static double loom_erfinv(double y) {
  if (isnan(y)) return y;
  const double ay = fabs(y);
  if (ay >= 1) return ay == 1 ? copysign(__builtin_inf(), y) : __builtin_nan("");
  if (ay <= 0.5) return loom_erfinv_mid(y);
  return copysign(loom_erfcinv_pos(1 - ay), y);
}
/* The standard normal quantile: sqrt(2) erf^-1(2p - 1) in the middle (2p - 1 exact), and
   in each tail -/+ sqrt(2) erfc^-1 of twice the tail's probability. */
static double loom_ndtri(double p) {
  if (isnan(p)) return p;
  if (p <= 0) return p == 0 ? -__builtin_inf() : __builtin_nan("");
  if (p >= 1) return p == 1 ? __builtin_inf() : __builtin_nan("");
  const double r2 = 1.41421356237309504880;
  if (p < 0.25) return -r2 * loom_erfcinv_pos(2 * p);
  if (p > 0.75) return r2 * loom_erfcinv_pos(2 * (1 - p));
  return r2 * loom_erfinv_mid(2 * p - 1);
}
/* I_nu(x), nu = 0 or 1, x >= 0, times e^-x when `scaled`: the power series
   sum (x^2/4)^k / (k! (k + nu)!) (x/2)^nu up to x = 30, all terms positive; beyond, the
   asymptotic series e^x / sqrt(2 pi x) sum_k prod_j ((2j - 1)^2 - 4 nu^2) / (8 j x). */
static double loom_bessel_i(int nu, double x, int scaled) {
  if (x <= 30) {
    const double t = 0.25 * x * x;
    double term = 1, sum = 1;
    for (int k = 1; k < 300 && term >= sum * 1e-17; ++k) {
      term *= t / (k * (double)(k + nu));
      sum += term;
    }
    if (nu) sum *= 0.5 * x;
    return scaled ? sum * exp(-x) : sum;
  }
  if (isinf(x)) return scaled ? 0 : __builtin_nan("");  /* e^x / sqrt(x) is inf / inf on the CPU */
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2.0 * k - 1;
    term *= (odd * odd - mu) / (8.0 * k * x);
    sum += term;
    if (fabs(term) < sum * 1e-17) break;
  }
  const double s = sum / sqrt(2 * 3.14159265358979323846 * x);
  return scaled ? s : s * exp(x);
}
/* erfc(x) e^(x^2): the product directly below 26 (both factors in range), beyond it the
   asymptotic series 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k. */
static double loom_erfcx(double x) {
  if (x < 26) return x != x ? x : exp(x * x) * erfc(x);
  const double w = 1 / (2 * x * x);
  double term = 1, sum = 1;
  for (int k = 1; k < 20 && fabs(term) > 1e-17 * sum; ++k) {
    term *= -(2.0 * k - 1) * w;
    sum += term;
  }
  return sum / (x * 1.77245385090551602730);
}
static inline double loom_i0(double x) { return loom_bessel_i(0, fabs(x), 0); }
static inline double loom_i0e(double x) { return loom_bessel_i(0, fabs(x), 1); }
static inline double loom_i1(double x) { return copysign(loom_bessel_i(1, fabs(x), 0), x); }
static inline double loom_i1e(double x) { return copysign(loom_bessel_i(1, fabs(x), 1), x); }
double frexp(double, int*); float frexpf(float, int*);
static inline double loom_frexp_m(double x) { int e; return frexp(x, &e); }
static inline float loom_frexp_mf(float x) { int e; return frexpf(x, &e); }
static inline double loom_frexp_e(double x) { int e; frexp(x, &e); return e; }
static inline float loom_frexp_ef(float x) { int e; frexpf(x, &e); return (float)e; }
/* gcd by Euclid's algorithm on the magnitudes. */
#define LOOM_GCD(T)                                                          \
  static inline T loom_gcd_##T(T a, T b) {                                   \
    a = a < 0 ? (T)(0 - (uint64_t)a) : a;                                    \
    b = b < 0 ? (T)(0 - (uint64_t)b) : b;                                    \
    while (a != 0) {                                                         \
      T c = a;                                                               \
      a = (T)(b % a);                                                        \
      b = c;                                                                 \
    }                                                                        \
    return b;                                                                \
  }
LOOM_GCD(uint8_t) LOOM_GCD(int8_t) LOOM_GCD(int16_t) LOOM_GCD(int32_t) LOOM_GCD(int64_t)
/* The bfloat16 after a toward b (both bfloat16 values held in float): one step of the
   16-bit pattern, as nextafter steps a float's. */
static inline float loom_nextafter_bf(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return b;
  uint32_t u = loom_fbits(a) >> 16;
  if (a == 0) u = (loom_fbits(b) >> 16 & 0x8000u) | 1u;
  else u = ((a < b) == (a > 0)) ? u + 1 : u - 1;
  return loom_bitsf(u << 16);
}
/* The float16 after a toward b (float16 values held in float), by its 16-bit pattern. */
static inline float loom_nextafter_h(float a, float b) {
  if (a != a || b != b) return a + b;
  if (a == b) return b;
  _Float16 h = (_Float16)a, hb = (_Float16)b;
  uint16_t u, ub;
  __builtin_memcpy(&u, &h, 2);
  __builtin_memcpy(&ub, &hb, 2);
  if (a == 0) u = (uint16_t)((ub & 0x8000u) | 1u);
  else u = (uint16_t)(((a < b) == (a > 0)) ? u + 1 : u - 1);
  __builtin_memcpy(&h, &u, 2);
  return (float)h;
}
)";
}

}  // namespace loom
