// sin, cos, tan, atan, asin, acos and atan2 of float32 (and the reduced floats computed in
// it) for generated kernels: computed in double and rounded once, branch-free, so that
// loops over them vectorize, where libm's sinf kept them scalar (3.2 ms for 1M floats on
// two threads, eager 0.87). Checked over all 2^32 inputs against the float64 function
// rounded to float: 22 (sin), 24 (cos) and 60 (tan) inputs differ, by one ulp, the inverses
// none (atan2 over 4e8 pairs); glibc's sinf differs on 29M.
#include "codegen/ops_c.h"

namespace loom {

// NOTE [Trig reduction]: x = q pi/2 + r with |r| <= pi/4, in double. Below 2^28, Cody-Waite
// with pi/2 in three parts, the first two of 25 bits, so that n * part is exact for the
// quotients there and each subtraction cancels exactly; the third part's rounding leaves r
// correct to ~2^-75 absolutely. From 2^28 up, Payne-Hanek: x = m 2^e, and x 2/pi mod 4
// needs only the bits of 2/pi from 2^(1-e) on, a 96-bit window per exponent (the tables:
// 2 integer and 94 fraction bits of 2^e 2/pi mod 4, for e = 5 ... 104); m times the
// window, kept to 64 bits, is the quadrant and 62 bits of fraction. Both run for every
// lane and a select keeps one: the tables' two gathers cost a quarter of the time (1M
// floats on one thread: 1.44 ms, 0.80 without the large path; a third gather, the
// window as three 32-bit words, 1.70). A kernel that may rerun leaves the large path to
// its strict run, as for float64 (NOTE [Double trig]): 1M floats on two threads, sin
// 0.84 -> 0.62 ms, cos 0.86 -> 0.52, tan 0.96 -> 0.69 (eager 0.95-1.0, 1.1-1.2, 1.8).
const char* c_trig_prelude() {
  return R"(static const uint64_t loom_2opi_hi[100] = {
  0x17cc1b727220a94full, 0x2f9836e4e441529full, 0x5f306dc9c882a53full, 0xbe60db9391054a7full,
  0x7cc1b727220a94feull, 0xf9836e4e441529fcull, 0xf306dc9c882a53f8ull, 0xe60db9391054a7f0ull,
  0xcc1b727220a94fe1ull, 0x9836e4e441529fc2ull, 0x306dc9c882a53f84ull, 0x60db9391054a7f09ull,
  0xc1b727220a94fe13ull, 0x836e4e441529fc27ull, 0x06dc9c882a53f84eull, 0x0db9391054a7f09dull,
  0x1b727220a94fe13aull, 0x36e4e441529fc275ull, 0x6dc9c882a53f84eaull, 0xdb9391054a7f09d5ull,
  0xb727220a94fe13abull, 0x6e4e441529fc2757ull, 0xdc9c882a53f84eafull, 0xb9391054a7f09d5full,
  0x727220a94fe13abeull, 0xe4e441529fc2757dull, 0xc9c882a53f84eafaull, 0x9391054a7f09d5f4ull,
  0x27220a94fe13abe8ull, 0x4e441529fc2757d1ull, 0x9c882a53f84eafa3ull, 0x391054a7f09d5f47ull,
  0x7220a94fe13abe8full, 0xe441529fc2757d1full, 0xc882a53f84eafa3eull, 0x91054a7f09d5f47dull,
  0x220a94fe13abe8faull, 0x441529fc2757d1f5ull, 0x882a53f84eafa3eaull, 0x1054a7f09d5f47d4ull,
  0x20a94fe13abe8fa9ull, 0x41529fc2757d1f53ull, 0x82a53f84eafa3ea6ull, 0x054a7f09d5f47d4dull,
  0x0a94fe13abe8fa9aull, 0x1529fc2757d1f534ull, 0x2a53f84eafa3ea69ull, 0x54a7f09d5f47d4d3ull,
  0xa94fe13abe8fa9a6ull, 0x529fc2757d1f534dull, 0xa53f84eafa3ea69bull, 0x4a7f09d5f47d4d37ull,
  0x94fe13abe8fa9a6eull, 0x29fc2757d1f534ddull, 0x53f84eafa3ea69bbull, 0xa7f09d5f47d4d377ull,
  0x4fe13abe8fa9a6eeull, 0x9fc2757d1f534ddcull, 0x3f84eafa3ea69bb8ull, 0x7f09d5f47d4d3770ull,
  0xfe13abe8fa9a6ee0ull, 0xfc2757d1f534ddc0ull, 0xf84eafa3ea69bb81ull, 0xf09d5f47d4d37703ull,
  0xe13abe8fa9a6ee06ull, 0xc2757d1f534ddc0dull, 0x84eafa3ea69bb81bull, 0x09d5f47d4d377036ull,
  0x13abe8fa9a6ee06dull, 0x2757d1f534ddc0dbull, 0x4eafa3ea69bb81b6ull, 0x9d5f47d4d377036dull,
  0x3abe8fa9a6ee06dbull, 0x757d1f534ddc0db6ull, 0xeafa3ea69bb81b6cull, 0xd5f47d4d377036d8ull,
  0xabe8fa9a6ee06db1ull, 0x57d1f534ddc0db62ull, 0xafa3ea69bb81b6c5ull, 0x5f47d4d377036d8aull,
  0xbe8fa9a6ee06db14ull, 0x7d1f534ddc0db629ull, 0xfa3ea69bb81b6c52ull, 0xf47d4d377036d8a5ull,
  0xe8fa9a6ee06db14aull, 0xd1f534ddc0db6295ull, 0xa3ea69bb81b6c52bull, 0x47d4d377036d8a56ull,
  0x8fa9a6ee06db14acull, 0x1f534ddc0db62959ull, 0x3ea69bb81b6c52b3ull, 0x7d4d377036d8a566ull,
  0xfa9a6ee06db14accull, 0xf534ddc0db629599ull, 0xea69bb81b6c52b32ull, 0xd4d377036d8a5664ull,
  0xa9a6ee06db14acc9ull, 0x534ddc0db6295993ull, 0xa69bb81b6c52b327ull, 0x4d377036d8a5664full,
};
static const uint32_t loom_2opi_lo[100] = {
  0xe13abe8fu, 0xc2757d1fu, 0x84eafa3eu, 0x09d5f47du, 0x13abe8fau, 0x2757d1f5u, 0x4eafa3eau,
  0x9d5f47d4u, 0x3abe8fa9u, 0x757d1f53u, 0xeafa3ea6u, 0xd5f47d4du, 0xabe8fa9au, 0x57d1f534u,
  0xafa3ea69u, 0x5f47d4d3u, 0xbe8fa9a6u, 0x7d1f534du, 0xfa3ea69bu, 0xf47d4d37u, 0xe8fa9a6eu,
  0xd1f534ddu, 0xa3ea69bbu, 0x47d4d377u, 0x8fa9a6eeu, 0x1f534ddcu, 0x3ea69bb8u, 0x7d4d3770u,
  0xfa9a6ee0u, 0xf534ddc0u, 0xea69bb81u, 0xd4d37703u, 0xa9a6ee06u, 0x534ddc0du, 0xa69bb81bu,
  0x4d377036u, 0x9a6ee06du, 0x34ddc0dbu, 0x69bb81b6u, 0xd377036du, 0xa6ee06dbu, 0x4ddc0db6u,
  0x9bb81b6cu, 0x377036d8u, 0x6ee06db1u, 0xddc0db62u, 0xbb81b6c5u, 0x77036d8au, 0xee06db14u,
  0xdc0db629u, 0xb81b6c52u, 0x7036d8a5u, 0xe06db14au, 0xc0db6295u, 0x81b6c52bu, 0x036d8a56u,
  0x06db14acu, 0x0db62959u, 0x1b6c52b3u, 0x36d8a566u, 0x6db14accu, 0xdb629599u, 0xb6c52b32u,
  0x6d8a5664u, 0xdb14acc9u, 0xb6295993u, 0x6c52b327u, 0xd8a5664fu, 0xb14acc9eu, 0x6295993cu,
  0xc52b3278u, 0x8a5664f1u, 0x14acc9e2u, 0x295993c4u, 0x52b32788u, 0xa5664f10u, 0x4acc9e21u,
  0x95993c43u, 0x2b327887u, 0x5664f10eu, 0xacc9e21cu, 0x5993c439u, 0xb3278872u, 0x664f10e4u,
  0xcc9e21c8u, 0x993c4390u, 0x32788720u, 0x64f10e41u, 0xc9e21c82u, 0x93c43904u, 0x27887208u,
  0x4f10e410u, 0x9e21c820u, 0x3c439041u, 0x78872083u, 0xf10e4107u, 0xe21c820fu, 0xc439041fu,
  0x8872083fu, 0x10e4107fu,
};
static inline __attribute__((always_inline)) double loom_trig_reduce(float x, int64_t* q,
                                                                     const int strict, int* seen) {
  uint32_t ax = loom_fbits(x) & 0x7fffffffu;
  double a = (double)__builtin_fabsf(x);
  a = a < 0x1p28 ? a : 0x1p28; /* the quotient stays an int64 where Payne-Hanek's is kept */
  double n = __builtin_rint(a * 0x1.45f306dc9c883p-1);
  double r = LOOM_FMA(-n, 0x1.921fb5p+0, a);
  r = LOOM_FMA(-n, 0x1.110b46p-26, r);
  r = LOOM_FMA(-n, 0x1.1a62633145c07p-54, r);
  uint32_t e = ax >> 23;
  *seen |= e >= 155;
  if (!strict) { /* a large argument reruns the kernel strict (NOTE [Double trig]) */
    *q = (int64_t)n;
    return r;
  }
  uint32_t k = e < 155 ? 0 : e - 155;
  k = k > 99 ? 99 : k;
  uint64_t m = (ax & 0x7fffffu) | 0x800000u;
  uint64_t t = m * loom_2opi_hi[k] + ((m * loom_2opi_lo[k]) >> 32);
  uint64_t nl = (t + (1ull << 61)) >> 62;
  double rl = (double)(int64_t)(t - (nl << 62)) * 0x1.921fb54442d18p-62;
  int big = e >= 155;
  *q = big ? (int64_t)nl : (int64_t)n;
  return big ? rl : r;
}
/* Taylor series to r^13 and r^14: within 2^-36 of sin and cos for |r| <= pi/4. */
static inline double loom_sin_poly(double r) {
  double z = r * r;
  double p = LOOM_FMA(z, 0x1.6124613a86d09p-33, -0x1.ae64567f544e4p-26);
  p = LOOM_FMA(z, p, 0x1.71de3a556c734p-19);
  p = LOOM_FMA(z, p, -0x1.a01a01a01a01ap-13);
  p = LOOM_FMA(z, p, 0x1.1111111111111p-7);
  p = LOOM_FMA(z, p, -0x1.5555555555555p-3);
  return LOOM_FMA(r * z, p, r);
}
static inline double loom_cos_poly(double r) {
  double z = r * r;
  double p = LOOM_FMA(z, -0x1.93974a8c07c9dp-37, 0x1.1eed8eff8d898p-29);
  p = LOOM_FMA(z, p, -0x1.27e4fb7789f5cp-22);
  p = LOOM_FMA(z, p, 0x1.a01a01a01a01ap-16);
  p = LOOM_FMA(z, p, -0x1.6c16c16c16c17p-10);
  p = LOOM_FMA(z, p, 0x1.5555555555555p-5);
  p = LOOM_FMA(z, p, -0.5);
  return LOOM_FMA(z, p, 1.0);
}
/* Each is odd or even in x: computed for |x|, with x's sign put back where odd (so that
   -0 gives -0). Infinities and NaN give NaN. */
static inline __attribute__((always_inline)) float loom_sinf_k(float x, const int strict,
                                                                int* seen) {
  int64_t q;
  double r = loom_trig_reduce(x, &q, strict, seen);
  double v = (q & 1) ? loom_cos_poly(r) : loom_sin_poly(r);
  v = (((uint64_t)q >> 1 ^ loom_fbits(x) >> 31) & 1) ? -v : v;
  return __builtin_isfinite(x) ? (float)v : x - x;
}
static inline __attribute__((always_inline)) float loom_cosf_k(float x, const int strict,
                                                                int* seen) {
  int64_t q;
  double r = loom_trig_reduce(x, &q, strict, seen);
  double v = (q & 1) ? -loom_sin_poly(r) : loom_cos_poly(r);
  v = (q & 2) ? -v : v;
  return __builtin_isfinite(x) ? (float)v : x - x;
}
static inline __attribute__((always_inline)) float loom_tanf_k(float x, const int strict,
                                                                int* seen) {
  int64_t q;
  double r = loom_trig_reduce(x, &q, strict, seen);
  double s = loom_sin_poly(r), c = loom_cos_poly(r);
  double v = (q & 1) ? -c / s : s / c;
  v = (loom_fbits(x) >> 31) ? -v : v;
  return __builtin_isfinite(x) ? (float)v : x - x;
}
/* atan(t) for t in [0, 1] (or NaN): t = c + u' with c the nearest quarter, atan(c) from a
   table of five, and atan of the step u = (t - c) / (1 + t c) by its series to u^15
   (|u| <= 0.125). atan2 folds its arguments into [0, 1] and back, with C's special cases
   (signed zeros, infinities); asin and acos are atan2 of x and sqrt(1 - x^2). */
static inline double loom_atan01(double t) {
  double k = __builtin_rint(t * 4.0);
  double c = k * 0.25;
  double base = k == 1.0 ? 0x1.f5b75f92c80ddp-3 : k == 2.0 ? 0x1.dac670561bb4fp-2
              : k == 3.0 ? 0x1.4978fa3269ee1p-1 : k == 4.0 ? 0x1.921fb54442d18p-1 : 0.0;
  double u = (t - c) / LOOM_FMA(t, c, 1.0);
  double z = u * u;
  double p = LOOM_FMA(z, -0x1.1111111111111p-4, 0x1.3b13b13b13b14p-4);
  p = LOOM_FMA(z, p, -0x1.745d1745d1746p-4);
  p = LOOM_FMA(z, p, 0x1.c71c71c71c71cp-4);
  p = LOOM_FMA(z, p, -0x1.2492492492492p-3);
  p = LOOM_FMA(z, p, 0x1.999999999999ap-3);
  p = LOOM_FMA(z, p, -0x1.5555555555555p-2);
  return base + LOOM_FMA(u * z, p, u);
}
static inline double loom_atan2_wide(double y, double x) {
  double ax = __builtin_fabs(x), ay = __builtin_fabs(y);
  int swap = ay > ax;
  double num = swap ? ax : ay, den = swap ? ay : ax;
  double t = num == 0.0 ? 0.0 : __builtin_isinf(num) ? 1.0 : num / den;
  double r = loom_atan01(t);
  r = swap ? 0x1.921fb54442d18p+0 - r : r;
  r = (loom_dbits(x) >> 63) ? 0x1.921fb54442d18p+1 - r : r;
  return x != x || y != y ? x + y : __builtin_copysign(r, y);
}
static inline float loom_atanf(float x) {
  double a = __builtin_fabs((double)x);
  int big = a > 1.0;
  double r = loom_atan01(big ? 1.0 / a : a);
  r = big ? 0x1.921fb54442d18p+0 - r : r;
  return (float)__builtin_copysign(r, (double)x);
}
static inline float loom_atan2f(float y, float x) { return (float)loom_atan2_wide(y, x); }
static inline float loom_asinf(float x) {
  double d = x;
  return (float)loom_atan2_wide(d, __builtin_sqrt(LOOM_FMA(-d, d, 1.0)));
}
static inline float loom_acosf(float x) {
  double d = x;
  return (float)loom_atan2_wide(__builtin_sqrt(LOOM_FMA(-d, d, 1.0)), d);
}
)";
}

}  // namespace loom
