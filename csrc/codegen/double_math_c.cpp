// exp, expm1, tanh, sinh, cosh, log, log1p, atan, atan2, asin and acos of float64 for
// generated kernels (NOTE [Double math]), and its fmod, remainder and floor division; and
// erfc of float32, computed in double with exp.
#include "codegen/ops_c.h"

namespace loom {

// NOTE [Float pow]: libm's powf kept a kernel over a float32 power with an exponent other
// than the CPU's shortcuts (0, +-0.5, +-1, 2, 3, -2) scalar: `x ** 1.7` over 1M floats took
// 3.3 ms (eager 4.4-4.9). It is e^(y log|x|) in double here, with the double log and exp
// below: their relative errors, below 2^-52 each and scaled by |y log x| (at most ~2^13
// before the result leaves float's range), stay far below float's half ulp, so the result
// is the float nearest the exact power but where that lies within ~2^-30 ulp of a tie
// between two floats (the CPU's SLEEF powf is within 1 ulp). C's special cases follow
// from the formula (zeros, infinities, NaN) but for those loom_powfd sets. Float16 and
// bfloat16 powers (computed in float) take it too.
// NOTE [Double math]: libm's double functions are scalar calls, so a float64 kernel over
// exp (softmax, sigmoid, SiLU, ELU, logsumexp) or tanh ran 1.5-2x slower than eager's
// vectorized ones (1M doubles: exp 2.4 ms against 1.6, tanh 9.0 against 4.7). These are
// branch-free, so loops over them vectorize. exp reduces x = n ln2 + r with ln2 in two
// parts (the first ends in 11 zero bits, so n times it and x less that are exact, and the
// rounding of the second is carried as rl), takes e^r = 1 + r + r^2 (1/2 + r p(r)) with
// 1 + r kept as an exact pair so that the one rounding is the last, and scales by 2^n in
// two factors (subnormal and near-overflow results). expm1 sums its exact parts 2^n r,
// 2^n - 1 and 2^n r^2 / 2 with TwoSum before the rest. tanh below 0.625 and sinh and cosh
// below 1 are odd or even polynomials (Chebyshev fits of the series' remainders), above
// that tanh is e / (e + 2) for e = e^2x - 1 as a pair, its quotient corrected by the exact
// remainder, and sinh, cosh are e^x / 2 (a pair) -+ 1 / (4 (e^x / 2)), finite up to
// 710.4758 where e^x alone overflows. log takes u = 2^k m, f = m - 1 and s = f / (2 + f),
// log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)) with the exact f and k ln2's exact part added
// last; log1p is log(1 + y) plus the rounding error of 1 + y (TwoSum) over 1 + y. Largest
// errors against a long double reference over 2-4e7 inputs of several ranges: exp 0.68
// ulp, expm1 0.92, tanh 0.77, sinh 0.75, cosh 0.81, log 0.84, log1p 0.84 (the CPU's
// vectorized functions are within 1 ulp). A float64 softplus, log1p(exp(x)), vectorized
// with exp alone ran slower than before (17 ms against 11: the loop called libm's log1p
// lane by lane); with both its own, 1M doubles take 1 ms. Their pairs need an exact fma: without
// hardware fma, libm's functions are called.
const char* c_double_math_prelude() {
  return R"(#ifdef __FMA__
/* x = n ln2 + rh + rl, |rh| <= ln2/2 (ln2's first part ends in 11 zero bits, so n times
   it, and x less that, are exact); n in *n, rl in *rl. */
static inline double loom_dexp_reduce(double x, double* n, double* rl) {
  double k = __builtin_rint(x * 0x1.71547652b82fep+0);
  double r1 = LOOM_FMA(k, -0x1.62e42fefa3800p-1, x);
  double rh = LOOM_FMA(k, -0x1.ef35793c76730p-45, r1);
  *rl = LOOM_FMA(k, -0x1.ef35793c76730p-45, r1 - rh);
  *n = k;
  return rh;
}
/* e^r for x = n ln2 + r as hi + *lo: 1 + r exactly as a pair, then the small terms. */
static inline double loom_dexp_pair(double x, double* n, double* lo) {
  double rl, r = loom_dexp_reduce(x, n, &rl);
  double hi = 1.0 + r, err = (1.0 - hi) + r;
  *lo = err + LOOM_FMA(r * r, LOOM_FMA(r, loom_dexp_poly3(r), 0.5), rl);
  return hi;
}
static inline double loom_dexp_core(double x, double* n) {
  double lo, hi = loom_dexp_pair(x, n, &lo);
  return hi + lo;
}
/* p 2^n in two factors, so that neither over- nor underflows before the product. */
static inline double loom_dscale2(double p, int64_t n) {
  int64_t h = n >> 1;
  return p * loom_bitsd((uint64_t)(h + 1023) << 52) * loom_bitsd((uint64_t)(n - h + 1023) << 52);
}
static inline double loom_expd(double x) {
  double k, p = loom_dexp_core(x > 709.8 ? 709.8 : x < -746.0 ? -746.0 : x, &k);
  double v = loom_dscale2(p, (int64_t)k);
  return x > 709.782712893384 ? __builtin_inf() : x < -745.2 ? 0.0 : x != x ? x : v;
}
/* e^x / 2 for 0 <= x <= 710.5 as hi + *lo (cosh and sinh, finite past e^x's overflow). */
static inline double loom_dexp_half(double x, double* lo) {
  double k, l, h = loom_dexp_pair(x > 710.5 ? 710.5 : x, &k, &l);
  int64_t n = (int64_t)k - 1, m = n >> 1;
  double s1 = loom_bitsd((uint64_t)(m + 1023) << 52), s2 = loom_bitsd((uint64_t)(n - m + 1023) << 52);
  *lo = l * s1 * s2;
  return h * s1 * s2;
}
/* e^x - 1 = 2^n (1 + s) - 1, s = e^r - 1, as hi + *lo: the exact parts 2^n r, 2^n - 1 and
   2^n r^2/2 summed exactly, the rest beside them. x in [-40, 709.8]. */
static inline double loom_dexpm1_pair(double x, double* lo) {
  double k, rl, r = loom_dexp_reduce(x, &k, &rl);
  /* 2^1024 is past double: the pair is half the value (its - 1 then - 1/2,
     far below the last place) above 693.5, doubled by the caller. */
  double two = loom_bitsd((uint64_t)((int64_t)k - (x > 693.5) + 1023) << 52);
  double r2 = r * r, r2l = LOOM_FMA(r, r, -r2);
  double small = LOOM_FMA(r2 * r, loom_dexp_poly3(r), LOOM_FMA(0.5, r2l, rl));
  double a = two * r, b = two - 1.0, c = two * (0.5 * r2);
  double s1 = a + b, t1 = s1 - a, e1 = (a - (s1 - t1)) + (b - t1);
  double s2 = s1 + c, t2 = s2 - s1, e2 = (s1 - (s2 - t2)) + (c - t2);
  /* (two - b) - 1: the 1 that two - 1 drops from n = 54 on */
  *lo = LOOM_FMA(two, small, (e1 + e2) + ((two - b) - 1.0));
  return s2;
}
static inline double loom_expm1d(double x) {
  double lo, hi = loom_dexpm1_pair(x > 709.8 ? 709.8 : x < -40.0 ? -40.0 : x, &lo);
  double v = (hi + lo) * (x > 693.5 ? 2.0 : 1.0);
  v = x > 709.782712893384 ? __builtin_inf() : v;
  return x < -40.0 ? -1.0 : x != x || x == 0.0 ? x : v;
}
/* tanh: x + x^3 P(x^2) below 0.625, else e / (e + 2) with e = e^2x - 1 as a pair and the
   quotient corrected by its exact remainder. */
static inline double loom_tanhd(double x) {
  double a = __builtin_fabs(x), z = a * a;
  double p = LOOM_FMA(z, 0x1.b33642a122cddp-18, -0x1.05bbdae896297p-15);
  p = LOOM_FMA(z, p, 0x1.8445870f6fe41p-14);
  p = LOOM_FMA(z, p, -0x1.f243823c8c981p-13);
  p = LOOM_FMA(z, p, 0x1.3526e9ed54da1p-11);
  p = LOOM_FMA(z, p, -0x1.7d9f6f23e8682p-10);
  p = LOOM_FMA(z, p, 0x1.d6d39ae3905e2p-9);
  p = LOOM_FMA(z, p, -0x1.226e3473dce5cp-7);
  p = LOOM_FMA(z, p, 0x1.664f487e0a749p-6);
  p = LOOM_FMA(z, p, -0x1.ba1ba1ba0f126p-5);
  p = LOOM_FMA(z, p, 0x1.11111111110a8p-3);
  p = LOOM_FMA(z, p, -0x1.5555555555555p-2);
  double small = LOOM_FMA(a * z, p, a);
  double el, eh = loom_dexpm1_pair(a > 20.0 ? 40.0 : 2.0 * a, &el);
  double en = eh + el;
  el = el - (en - eh); /* normalized: |el| <= ulp(eh) / 2 */
  eh = en;
  double d = eh + 2.0, dl = (2.0 - (d - eh)) + el; /* eh >= 2: Fast2Sum */
  double t = eh / d;
  t = t + (LOOM_FMA(-t, d, eh) + el - t * dl) / d;
  t = a < 0.625 ? small : a > 19.1 ? 1.0 : t;
  return x != x ? x : __builtin_copysign(t, x);
}
/* sinh and cosh: their series below 1, else e^x / 2 (as a pair) -+ 1 / (4 (e^x / 2)). */
static inline double loom_sinhd(double x) {
  double a = __builtin_fabs(x), z = a * a;
  double p = LOOM_FMA(z, 0x1.b41232cf9950fp-41, 0x1.611cb330c1fe8p-33);
  p = LOOM_FMA(z, p, 0x1.ae6460fae3728p-26);
  p = LOOM_FMA(z, p, 0x1.71de3a4e14f40p-19);
  p = LOOM_FMA(z, p, 0x1.a01a01a01ee70p-13);
  p = LOOM_FMA(z, p, 0x1.11111111110fdp-7);
  p = LOOM_FMA(z, p, 0x1.5555555555555p-3);
  double small = LOOM_FMA(a * z, p, a);
  double l, h = loom_dexp_half(a, &l);
  double big = h + (l - 0.25 / (h + l));
  return x != x ? x : __builtin_copysign(a < 1.0 ? small : big, x);
}
static inline double loom_coshd(double x) {
  double a = __builtin_fabs(x), z = a * a;
  double p = LOOM_FMA(z, 0x1.b372dbe9fbac4p-45, 0x1.93907865bd1d7p-37);
  p = LOOM_FMA(z, p, 0x1.1eed93a725e03p-29);
  p = LOOM_FMA(z, p, 0x1.27e4fb7447711p-22);
  p = LOOM_FMA(z, p, 0x1.a01a01a01c2e2p-16);
  p = LOOM_FMA(z, p, 0x1.6c16c16c16c0ep-10);
  p = LOOM_FMA(z, p, 0x1.5555555555555p-5);
  double zl = LOOM_FMA(a, a, -z), hz = 0.5 * z;
  double s1 = 1.0 + hz, e1 = (1.0 - s1) + hz; /* hz <= 1/2: Fast2Sum */
  double small = s1 + (e1 + LOOM_FMA(z * z, p, 0.5 * zl));
  double l, h = loom_dexp_half(a, &l);
  double big = h + (l + 0.25 / (h + l));
  return x != x ? x : a < 1.0 ? small : big;
}
/* log(u) + t for u > 0 finite, t a correction below u's last place: u = 2^k m with m in
   [sqrt 1/2, sqrt 2), f = m - 1 (exact), s = f / (2 + f); log(1 + f) = f - f^2/2 +
   s (f^2/2 + R) with R = 2 s^2/3 + 2 s^4/5 + ... (a Chebyshev fit), summed so that the
   exact f and k ln2's exact first part come last. */
static inline double loom_dlog_core(double u, double t) {
  int sub = u < 0x1p-1022;
  u = sub ? u * 0x1p54 : u;
  uint64_t b = loom_dbits(u);
  double m = loom_bitsd((b & 0xfffffffffffffull) | 0x3ff0000000000000ull);
  int hi = m > 0x1.6a09e667f3bcdp+0;
  m = hi ? m * 0.5 : m;
  double k = (double)((int64_t)(b >> 52) - 1023 + hi - (sub ? 54 : 0));
  double f = m - 1.0, s = f / (2.0 + f), z = s * s;
  double p = LOOM_FMA(z, 0x1.2b5900de53b32p-3, 0x1.39fe51a7c18f9p-3);
  p = LOOM_FMA(z, p, 0x1.7462b51cb66b1p-3);
  p = LOOM_FMA(z, p, 0x1.c71c62e3f11e6p-3);
  p = LOOM_FMA(z, p, 0x1.2492492df281ap-2);
  p = LOOM_FMA(z, p, 0x1.99999999952d7p-2);
  p = LOOM_FMA(z, p, 0x1.5555555555558p-1);
  double hfsq = 0.5 * f * f;
  double lo = LOOM_FMA(s, LOOM_FMA(z, p, hfsq), LOOM_FMA(k, 0x1.ef35793c76730p-45, t));
  return LOOM_FMA(k, 0x1.62e42fefa3800p-1, f - (hfsq - lo));
}
static inline double loom_logd(double x) {
  double v = loom_dlog_core(x > 0.0 && x <= 0x1.fffffffffffffp+1023 ? x : 1.0, 0.0);
  return x == 0.0 ? -__builtin_inf() : x < 0.0 ? __builtin_nan("") : x > 0x1.fffffffffffffp+1023 || x != x ? x : v;
}
/* log(1 + y): u = 1 + y with its rounding error c (TwoSum), log(u) + c / u. */
static inline double loom_log1pd(double y) {
  double u = 1.0 + y, bv = u - y, c = (1.0 - bv) + (y - (u - bv));
  int ok = y > -1.0 && y <= 0x1.fffffffffffffp+1023;
  double v = loom_dlog_core(ok ? u : 1.0, ok ? c / u : 0.0);
  return y == -1.0 ? -__builtin_inf() : y < -1.0 ? __builtin_nan("") : !ok || y == 0.0 ? y : v;
}
/* NOTE [Float fmod] for float64: one step, exact where |a / b| < 2^50 (most quotients): q
   from a reciprocal rounded low is right or one short, and of a - q b and a - (q + 1) b,
   both by one fma, the second is exact when it is not negative and the first is exact
   otherwise. A longer quotient is recorded for the kernel's strict run, which calls
   libm (NOTE [Deferred checks]); a subnormal-range b is scaled by 2^100 with a first. */
static inline __attribute__((always_inline)) double loom_fmodd_k(double a, double b,
                                                                 const int strict, int* seen) {
  if (strict) return fmod(a, b);
  double A = __builtin_fabs(a), B = __builtin_fabs(b);
  int bad = !(A <= 0x1.fffffffffffffp+1023) || !(B > 0.0); /* NaN */
  int big = B > 0x1.fffffffffffffp+1023;                     /* b infinite: a */
  B = bad | big ? 1.0 : B;
  A = bad ? 0.0 : A;
  double sc = B < 0x1p-1000 ? 0x1p100 : 1.0;
  A = A * sc;
  B = B * sc;
  double qd = A * ((1.0 / B) * (1.0 - 0x1p-51));
  *seen |= !(qd < 0x1p50);
  double q = __builtin_trunc(qd < 0x1p50 ? qd : 0.0);
  double r1 = LOOM_FMA(-q, B, A), r2 = LOOM_FMA(-(q + 1.0), B, A);
  double m = __builtin_copysign((r2 >= 0.0 ? r2 : r1) * (1.0 / sc), a);
  return bad ? __builtin_nan("") : big ? a : m;
}
/* atan, atan2, asin and acos: the argument folded into [0, 1] as a pair (a quotient with
   its exact remainder), t = c + a step with c = k/8 and atan(c) a pair from a table, the
   step's atan by u + u^3 P(u^2) (|u| <= 1/16, a Chebyshev fit), and back by pi/2 - and
   pi - in pairs; asin and acos are atan2 of a and sqrt(1 - a^2), that root a pair too.
   Largest errors against long double over 8e6 inputs: atan 0.50 ulp, atan2 0.75, asin
   0.51, acos 0.73. */
static const double loom_datan_tab[9][2] = {
  {0.0, 0.0}, {0x1.fd5ba9aac2f6ep-4, -0x1.cd37686760c17p-59},
  {0x1.f5b75f92c80ddp-3, 0x1.8ab6e3cf7afbdp-57}, {0x1.6f61941e4def1p-2, -0x1.c63aae6f6e918p-56},
  {0x1.dac670561bb4fp-2, 0x1.a2b7f222f65e2p-56}, {0x1.1e00babdefeb4p-1, -0x1.928df287a668fp-58},
  {0x1.4978fa3269ee1p-1, 0x1.2419a87f2a458p-56}, {0x1.700a7c5784634p-1, -0x1.8c34d25aadef6p-56},
  {0x1.921fb54442d18p-1, 0x1.1a62633145c07p-55}};
/* atan(th + tl) for th + tl in [0, 1] as hi + *lo: t = c + a step, c = k/8 the nearest,
   atan(c) from a table of pairs, the step's atan(u), u = (t - c) / (1 + t c) as a pair,
   by u + u^3 P(u^2) (|u| <= 1/16). */
static inline __attribute__((always_inline)) double loom_datan_core(double th, double tl, double* lo) {
  double kd = __builtin_rint(th * 8.0);
  int64_t k = (int64_t)kd;
  double c = kd * 0.125;
  double nh = th - c, nl = tl;                       /* th - c exact (Sterbenz or c = 0) */
  double dh = LOOM_FMA(th, c, 1.0), dl = LOOM_FMA(th, c, 1.0 - dh) + tl * c;
  double uh = nh / dh;
  double ul = (LOOM_FMA(-uh, dh, nh) + nl - uh * dl) / dh;
  double z = uh * uh;
  double p = LOOM_FMA(z, -0x1.0daa70fbec46ap-4, 0x1.3b0ed6e47d89dp-4);
  p = LOOM_FMA(z, p, -0x1.745d13d59c7cap-4);
  p = LOOM_FMA(z, p, 0x1.c71c71c5dc23bp-4);
  p = LOOM_FMA(z, p, -0x1.24924924922d6p-3);
  p = LOOM_FMA(z, p, 0x1.9999999999999p-3);
  p = LOOM_FMA(z, p, -0x1.5555555555555p-2);
  double ah = loom_datan_tab[k][0], al = loom_datan_tab[k][1];
  double s = ah + uh, e = (ah - s) + uh;             /* ah >= |uh| or ah = 0: Fast2Sum */
  *lo = e + (al + LOOM_FMA(uh * z, p, ul));
  return s;
}
/* hi + lo of b - (x + y) for a pair constant (bh, bl), exactly summed before rounding. */
static inline __attribute__((always_inline)) double loom_dpair_sub(double bh, double bl, double xh, double xl, double* lo) {
  double s = bh - xh, bb = s - bh, e = (bh - (s - bb)) + (-xh - bb);
  *lo = e + (bl - xl);
  return s;
}
static inline double loom_atand(double x) {
  double a = __builtin_fabs(x);
  int inv = a > 1.0;
  double th = inv ? 1.0 / a : a;
  double tl = inv ? LOOM_FMA(-th, a, 1.0) / a : 0.0;
  th = a > 0x1p60 ? 0.0 : th; tl = a > 0x1p60 ? 0.0 : tl;
  double lo, hi = loom_datan_core(th, tl, &lo);
  double rl, rh = loom_dpair_sub(0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54, hi, lo, &rl);
  double v = inv ? rh + rl : hi + lo;
  return x != x ? x : __builtin_copysign(v, x);
}
/* atan2 of pairs |y| = yh + yl, |x| = xh + xl (finite or infinite, not NaN): the smaller
   over the larger as a pair in [0, 1], then back by pi/2 - and pi -; x_neg: x < 0 or -0. */
static inline __attribute__((always_inline)) double loom_datan2_abs(double yh, double yl, double xh, double xl, int x_neg) {
  int swap = yh > xh;
  double nh = swap ? xh : yh, nl = swap ? xl : yl, dh = swap ? yh : xh, dl = swap ? yl : xl;
  int inf2 = __builtin_isinf(nh) && __builtin_isinf(dh);
  /* both scaled into a safe range for the remainder's fma (a huge or tiny divisor) */
  double sc = dh > 0x1p1000 ? 0x1p-100 : dh < 0x1p-900 ? 0x1p100 : 1.0;
  nh *= sc; nl *= sc; dh *= sc; dl *= sc;
  double th = nh == 0.0 ? 0.0 : inf2 ? 1.0 : nh / dh;
  double tl = nh == 0.0 || inf2 || __builtin_isinf(dh) ? 0.0 : (LOOM_FMA(-th, dh, nh) + (nl - th * dl)) / dh;
  double lo, hi = loom_datan_core(th, tl, &lo);
  double r1l, r1h = loom_dpair_sub(0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54, hi, lo, &r1l);
  hi = swap ? r1h : hi; lo = swap ? r1l : lo;
  double r2l, r2h = loom_dpair_sub(0x1.921fb54442d18p+1, 0x1.1a62633145c07p-53, hi, lo, &r2l);
  hi = x_neg ? r2h : hi; lo = x_neg ? r2l : lo;
  return hi + lo;
}
static inline double loom_atan2d(double y, double x) {
  int neg = (x < 0.0) || (x == 0.0 && __builtin_signbit(x));
  double v = loom_datan2_abs(__builtin_fabs(y), 0.0, __builtin_fabs(x), 0.0, neg);
  return x != x || y != y ? x + y : __builtin_copysign(v, y);
}
/* sqrt(1 - a^2) for a in [0, 1] as hi + *lo: 1 - a^2 as an exact pair first. */
static inline __attribute__((always_inline)) double loom_dcos_of_sin(double a, double* lo) {
  double ah = a * a, al = LOOM_FMA(a, a, -ah);
  double s = 1.0 - ah, e = (1.0 - s) - ah; /* ah <= 1: Fast2Sum */
  double sl = e - al;
  double wh = __builtin_sqrt(s);
  *lo = wh > 0.0 ? (LOOM_FMA(-wh, wh, s) + sl) / (2.0 * wh) : 0.0;
  return wh;
}
static inline double loom_asind(double x) {
  double a = __builtin_fabs(x);
  double wl, wh = loom_dcos_of_sin(a > 1.0 ? 0.0 : a, &wl);
  double v = loom_datan2_abs(a, 0.0, wh, wl, 0);
  return a > 1.0 ? __builtin_nan("") : x != x ? x : __builtin_copysign(v, x);
}
static inline double loom_acosd(double x) {
  double a = __builtin_fabs(x);
  double wl, wh = loom_dcos_of_sin(a > 1.0 ? 0.0 : a, &wl);
  double v = loom_datan2_abs(wh, wl, a, 0.0, x < 0.0);
  return a > 1.0 ? __builtin_nan("") : x != x ? x : v;
}
/* erfc of float32 in double: e^(-x^2) h(|x|), h = erfc(a) e^(a^2) a Chebyshev fit in
   t = 2 / (2 + a) (relative error below 5e-12 up to a = 10.1, where erfc leaves float's
   range), 2 less that below 0. libm's erfcf kept its kernels scalar (5.4 ms over 1M floats,
   eager 5.1). */
static inline float loom_erfcf(float x) {
  double a = __builtin_fabs((double)x), ac = a < 10.1 ? a : 10.1;
  double s = 2.0 / (2.0 + ac) - 0x1.2a50658dc0876p-1;
  double h = LOOM_FMA(s, -0x1.80152fb3c4b10p-6, 0x1.29d02ba2c452ap-6);
  h = LOOM_FMA(s, h, 0x1.aa17c4e0e60b1p-6);
  h = LOOM_FMA(s, h, -0x1.67c7ed60b6977p-5);
  h = LOOM_FMA(s, h, 0x1.09af8f90d07c0p-8);
  h = LOOM_FMA(s, h, 0x1.be5de8edfe758p-5);
  h = LOOM_FMA(s, h, -0x1.a8f460d0e263fp-5);
  h = LOOM_FMA(s, h, -0x1.5d872d55d0b8cp-5);
  h = LOOM_FMA(s, h, 0x1.d1cada58206bbp-4);
  h = LOOM_FMA(s, h, 0x1.128e86cbbcaf1p-6);
  h = LOOM_FMA(s, h, -0x1.dd014ca5f25f6p-3);
  h = LOOM_FMA(s, h, -0x1.25ea02c824e64p-5);
  h = LOOM_FMA(s, h, 0x1.45910a21a5c0ap-1);
  h = LOOM_FMA(s, h, 0x1.1fdb540057e27p+0);
  h = LOOM_FMA(s, h, 0x1.06f4dc72a4babp+0);
  h = LOOM_FMA(s, h, 0x1.54f4f5d026239p-2);
  double y = loom_expd(-(a * a)) * h;
  return x != x ? x : (float)(x < 0.0f ? 2.0 - y : y);
}
/* pow of float32 as e^(y log|x|) in double (NOTE [Float pow]), then C's special cases:
   the sign of an odd integer power of a negative base, NaN for a non-integer one of a
   finite negative base, 1 for (-1)^(+-inf), y = 0 and x = 1. Always inlined: with two
   uses in a kernel (a p-norm's |x|^p and its root) clang called it instead, and the call
   kept the reduction's lanes scalar (vector_norm(x, 3, dim=1) of 4096x256: 12.8 ms). */
static inline __attribute__((always_inline)) float loom_powfd(float x, float y) {
  double ax = __builtin_fabs((double)x);
  double r = loom_expd((double)y * loom_logd(ax));
  int yint = __builtin_truncf(y) == y;
  /* An integer power of a power of two is one too, exactly: a result halfway between two
     floats (2^-150) then rounds to even as the exact value does. */
  uint64_t ab = loom_dbits(ax);
  double e = (double)((int64_t)(ab >> 52) - 1023) * (double)y;
  e = e > 1100.0 ? 1100.0 : e < -1100.0 ? -1100.0 : e;
  r = yint && (ab << 12) == 0 && ax != 0.0 && ax <= 0x1p127 ? loom_dscale2(1.0, (int64_t)e) : r;
  int yodd = yint && __builtin_fabsf(y) < 0x1p24f && ((int32_t)y & 1);
  r = __builtin_signbit(x) && yodd ? -r : r;
  r = x < 0.0f && x > -__builtin_inff() && !yint ? __builtin_nan("") : r;
  r = x == -1.0f && __builtin_fabsf(y) == __builtin_inff() ? 1.0 : r;
  return y == 0.0f || x == 1.0f ? 1.0f : (float)r;
}
#else
#define loom_powfd powf
#define loom_expd exp
#define loom_expm1d expm1
#define loom_tanhd tanh
#define loom_sinhd sinh
#define loom_coshd cosh
#define loom_logd log
#define loom_log1pd log1p
#define loom_atand atan
#define loom_atan2d atan2
#define loom_asind asin
#define loom_acosd acos
#define loom_erfcf erfcf
#define loom_fmodd_k(a, b, strict, seen) fmod(a, b)
#endif
LOOM_FLOAT_DIV_FORMS(double, f64, loom_fmodd_k, __builtin_floor, __builtin_copysign)
)";
}

}  // namespace loom
