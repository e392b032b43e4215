// The float math of generated kernels: exp, log, log1p, tanh, erf and the normal CDF of
// float32 (and the reduced floats computed in it), branch-free so that kernels over them
// vectorize, each checked over all 2^32 inputs against the float64 result.
#include "codegen/ops_c.h"

namespace loom {

const char* c_math_prelude() {
  return R"(#ifdef __FMA__
#define LOOM_FMAF(a, b, c) __builtin_fmaf(a, b, c)
#else
#define LOOM_FMAF(a, b, c) ((a) * (b) + (c))
#endif
static inline uint32_t loom_fbits(float f) { union { float f; uint32_t u; } x; x.f = f; return x.u; }
static inline float loom_bitsf(uint32_t u) { union { float f; uint32_t u; } x; x.u = u; return x.f; }
#ifdef __FMA__
#define LOOM_FMA(a, b, c) __builtin_fma(a, b, c)
#else
#define LOOM_FMA(a, b, c) ((a) * (b) + (c))
#endif
static inline uint64_t loom_dbits(double d) { union { double d; uint64_t u; } x; x.d = d; return x.u; }
static inline double loom_bitsd(uint64_t u) { union { double d; uint64_t u; } x; x.u = u; return x.d; }
/* (e^r - 1 - r - r^2/2) / r^3 for |r| <= 0.35, by Taylor to r^13 (the float32 functions
   computed in double and the float64 ones share it). */
static inline double loom_dexp_poly3(double r) {
  double p = LOOM_FMA(r, 0x1.6124613a86d09p-33, 0x1.1eed8eff8d898p-29);
  p = LOOM_FMA(r, p, 0x1.ae64567f544e4p-26);
  p = LOOM_FMA(r, p, 0x1.27e4fb7789f5cp-22);
  p = LOOM_FMA(r, p, 0x1.71de3a556c734p-19);
  p = LOOM_FMA(r, p, 0x1.a01a01a01a01ap-16);
  p = LOOM_FMA(r, p, 0x1.a01a01a01a01ap-13);
  p = LOOM_FMA(r, p, 0x1.6c16c16c16c17p-10);
  p = LOOM_FMA(r, p, 0x1.1111111111111p-7);
  p = LOOM_FMA(r, p, 0x1.5555555555555p-5);
  return LOOM_FMA(r, p, 0x1.5555555555555p-3);
}
/* exp(x) = 2^n p(r) with x = n ln 2 + r: n = round(x / ln 2) by the 1.5 * 2^23 trick (t
   holds it in its low bits), p a polynomial on the remainder. */
static inline float loom_exp_core(float x, float* t_out) {
  float t = LOOM_FMAF(x, 1.44269504088896341f, 12582912.0f);
  float n = t - 12582912.0f;
  float r = LOOM_FMAF(n, -0.693145751953125f, x);
  r = LOOM_FMAF(n, -1.428606765330187e-06f, r);
  float q = LOOM_FMAF(0.001381461275741458f, r, 0.008368710055947304f);
  q = LOOM_FMAF(q, r, 0.04166838899254799f);
  q = LOOM_FMAF(q, r, 0.1666652113199234f);
  q = LOOM_FMAF(q, r, 0.4999999403953552f);
  *t_out = t;
  return LOOM_FMAF(q, r * r, r) + 1.0f;
}
/* NOTE [exp's scale]: 2^n as two exact scales, so that results reach the subnormals and
   overflow with one rounding: 2^(n + 64) then 2^-64 below zero, 2^(n - 1) then 2 above.
   Clamping x to [-104, 89] (where exp is 0 and inf; NaN passes) bounds n to [-150, 128].
   Two clamps (one vminps, one vmaxps each in clang's code) and two selects of constants
   replace halving n and fixing both ends on the result: 6 vector operations for 13, bit
   for bit the same values (all 2^32 inputs compared). The chain (x * 2 + 1).exp()... on
   cached data: 2.92 -> 2.81 ms a thread for 8M elements; 16M in Loom, caches flushed:
   4.29 -> 4.20 ms.
   NOTE [Underflow assists]: Intel's cores take a microcode assist (~100+ cycles) for a
   multiply whose result underflows, to 0 as much as to a subnormal. A masked softmax
   feeds exp -inf for half its elements (causal attention), and its kernel ran 3.3x slower
   for that (2.29 -> 0.70 ns an element a thread with the flush-to-zero bit set instead).
   Where exp is 0 (x at or below -0x1.9fe36ap+6, the largest such float) the last scale
   is 0 instead, which multiplies without underflowing; subnormal results, rarer, still
   take the assist. The same bits for all 2^32 inputs again; two more vector operations
   (x*2+1 -> exp -> ... on cached data 0.230 -> 0.244 ns an element a thread). */
static inline float loom_expf(float x) {
  int neg = x < 0.0f;
  float s = neg ? 0x1p-64f : 2.0f;
  s = x < -0x1.9fe368p+6f ? 0.0f : s;
  x = x > 89.0f ? 89.0f : x;
  x = x < -104.0f ? -104.0f : x;
  float t, p = loom_exp_core(x, &t);
  uint32_t bias = neg ? (uint32_t)(127 + 64) << 23 : (uint32_t)(127 - 1) << 23;
  return p * loom_bitsf((loom_fbits(t) << 23) + bias) * s;
}
/* The same exp for x known to lie in [-87, 88] (inside erf and tanh): one scale and no
   special cases. Bit for bit loom_expf there; NaN gives NaN. */
static inline float loom_expf_mid(float x) {
  float t, p = loom_exp_core(x, &t);
  return p * loom_bitsf((loom_fbits(t) - 0x4b400000u + 127u) << 23);
}
static inline float loom_logf(float x) {
  // Subnormals are scaled into the normal range first.
  int sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x;
  uint32_t u = loom_fbits(xs) - 0x3f3504f3u;
  int32_t e = ((int32_t)u >> 23) - (sub ? 23 : 0);
  float f = loom_bitsf((u & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  float q = LOOM_FMAF(-0.07622114568948746f, f, 0.1290469914674759f);
  q = LOOM_FMAF(q, f, -0.13242977857589722f);
  q = LOOM_FMAF(q, f, 0.14181777834892273f);
  q = LOOM_FMAF(q, f, -0.16609077155590057f);
  q = LOOM_FMAF(q, f, 0.20001976191997528f);
  q = LOOM_FMAF(q, f, -0.25001582503318787f);
  q = LOOM_FMAF(q, f, 0.33333325386047363f);
  q = LOOM_FMAF(q, f, -0.49999988079071045f);
  float ef = (float)e;
  float lo = LOOM_FMAF(q, f * f, ef * -2.12194440e-4f);
  float r = LOOM_FMAF(ef, 0.693359375f, f + lo);
  r = x == __builtin_inff() ? x : r;
  r = x == 0.0f ? -__builtin_inff() : r;
  r = x < 0.0f ? __builtin_nanf("") : r;
  return x != x ? x : r;
}
/* log(1 + x) as log(u) for u = 1 + x, plus the rounding error of that sum over u (the
   first term of log's series around u): vectorizes where libm's log1pf kept softplus
   scalar, 5x eager's time. At most 2 ulps from the float64 result over all 2^32 inputs
   (4.19e9 exact, 1.0e8 at 1 ulp, 5.2e5 at 2); u == 1 gives x (-0 stays -0), -1 gives
   -inf, below it NaN. */
static inline float loom_log1pf(float x) {
  float u = 1.0f + x;
  float c = u > 2.0f ? 1.0f - (u - x) : x - (u - 1.0f);
  float r = loom_logf(u) + c / u;
  r = u == 1.0f ? x : r;
  r = x == __builtin_inff() ? x : r;
  return u == 0.0f ? -__builtin_inff() : r;
}

static inline float loom_tanhf(float x) {
  float a = loom_bitsf(loom_fbits(x) & 0x7fffffffu);
  float a2 = a * a;
  float p = LOOM_FMAF(-0.005704983603209257f, a2, 0.0206390842795372f);
  p = LOOM_FMAF(p, a2, -0.05373971536755562f);
  p = LOOM_FMAF(p, a2, 0.13331441581249237f);
  p = LOOM_FMAF(p, a2, -0.3333328068256378f);
  float small = LOOM_FMAF(p * a2, a, a);
  /* tanh(9.5) is 1.0f: the clamp keeps exp's argument in loom_expf_mid's range */
  float big = 1.0f - 2.0f / (loom_expf_mid(2.0f * (a > 9.5f ? 9.5f : a)) + 1.0f);
  float r = a < 0.625f ? small : big;
  return loom_bitsf(loom_fbits(r) | (loom_fbits(x) & 0x80000000u));
}
/* NOTE [GELU's normal CDF]: Phi(x) = (1 + erf(x / sqrt 2)) / 2, the gate of exact GELU, as
   1/2 + x P(x^2) / Q(x^2): a rational of degrees 5 and 5, relative error 1.9e-8 on
   |x| <= 5.5437 (= 3.92 sqrt 2), where 1 + erf rounds to 0 and 2 in float; 0 and 1 beyond.
   Its error in float is absolute, at most 2e-7 (swept over every float), as that of
   PyTorch's own GELU is: for x < 0 neither keeps relative accuracy, and GELU's error over
   |x| is 2.0e-7 here against 2.7e-7 on the CPU (oneDNN's GELU for contiguous float32;
   ATen's, with an erf good to 1.5e-7 absolute, otherwise). torch.erf keeps loom_erff:
   in float the rational is 6 ulp off near 1. It costs half of 1 + erf (two branches and
   an exp): layer norm + GELU, 8192x1024, 6.0 -> 3.8 ms in a C harness. */
static inline float loom_ncdff(float x) {
  float s = x * x;
  float p = LOOM_FMAF(2.2650523234801767e-08f, s, 6.295046205195831e-06f);
  p = LOOM_FMAF(p, s, 0.00016641606634948403f);
  p = LOOM_FMAF(p, s, 0.0046623582020401955f);
  p = LOOM_FMAF(p, s, 0.03365922346711159f);
  p = LOOM_FMAF(p, s, 0.3989422619342804f);
  float q = LOOM_FMAF(1.1903650829481194e-06f, s, 7.265766180353239e-05f);
  q = LOOM_FMAF(q, s, 0.0018711391603574157f);
  q = LOOM_FMAF(q, s, 0.02852715738117695f);
  q = LOOM_FMAF(q, s, 0.2510375380516052f);
  q = LOOM_FMAF(q, s, 1.0f);
  float r = LOOM_FMAF(x, p / q, 0.5f);
  r = r < 0.0f ? 0.0f : r; /* rounding takes it 1.4e-7 past either end near them */
  r = r > 1.0f ? 1.0f : r;
  r = x < -5.5437171645025325f ? 0.0f : r;
  return x > 5.5437171645025325f ? 1.0f : r;
}
static inline float loom_erff(float x) {
  float a = loom_bitsf(loom_fbits(x) & 0x7fffffffu);
  float a2 = a * a;
  float p = LOOM_FMAF(7.853902206989005e-05f, a2, -0.0008010207093320787f);
  p = LOOM_FMAF(p, a2, 0.005188329610973597f);
  p = LOOM_FMAF(p, a2, -0.026853812858462334f);
  p = LOOM_FMAF(p, a2, 0.1128358542919159f);
  p = LOOM_FMAF(p, a2, -0.3761262595653534f);
  p = LOOM_FMAF(p, a2, 0.1283791670955126f);
  float small = LOOM_FMAF(p, a, a);
  float t = (a > 4.0f ? 4.0f : a) - 2.5f;
  float q = LOOM_FMAF(0.00018637944594956934f, t, -0.00015196914318948984f);
  q = LOOM_FMAF(q, t, 0.002465386874973774f);
  q = LOOM_FMAF(q, t, -0.010711259208619595f);
  q = LOOM_FMAF(q, t, -0.9438831210136414f);
  q = LOOM_FMAF(q, t, -5.352694034576416f);
  q = LOOM_FMAF(q, t, -7.806818008422852f);
  float big = 1.0f - loom_expf_mid(q); /* q lies in [-18.1, -1.8] */
  float r = a < 1.0f ? small : big;
  return loom_bitsf(loom_fbits(r) | (loom_fbits(x) & 0x80000000u));
}
)";
}

}  // namespace loom
