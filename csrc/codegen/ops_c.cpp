#include "codegen/ops_c.h"

#include <atomic>
#include <cmath>
#include <stdexcept>

namespace loom {

const char* c_prelude() {
  return R"(typedef _Float16 loom_half;
static inline float loom_bf2f(uint16_t b) { union { uint32_t u; float f; } x; x.u = (uint32_t)b << 16; return x.f; }
static inline uint16_t loom_f2bf(float f) {
  union { uint32_t u; float f; } x; x.f = f;
  if (f != f) return 0x7fc0;
  return (uint16_t)((x.u + 0x7fffu + ((x.u >> 16) & 1u)) >> 16);
}
static inline float loom_rh(float f) { return (float)(loom_half)f; }
static inline float loom_rb(float f) { return loom_bf2f(loom_f2bf(f)); }
#define LOOM_MAX(a, v) ({ __typeof__(a) a_ = (a), v_ = (v), m_ = v_ > a_ ? v_ : a_; v_ != v_ ? v_ : m_; })
#define LOOM_MIN(a, v) ({ __typeof__(a) a_ = (a), v_ = (v), m_ = v_ < a_ ? v_ : a_; v_ != v_ ? v_ : m_; })
static inline int32_t loom_fkey(float v) { union { float f; int32_t i; } u; u.f = v + 0.0f; return u.i >= 0 ? u.i : u.i ^ 0x7fffffff; }
static inline int64_t loom_dkey(double v) { union { double f; int64_t i; } u; u.f = v + 0.0; return u.i >= 0 ? u.i : u.i ^ 0x7fffffffffffffffLL; }
/* NOTE [Integer division]: an integer division instruction is scalar, and a loop over one
   stayed scalar (int64 floor division of 1M elements: 6.9 ms against eager's 4.7). Here the
   quotient comes from doubles, so that such loops vectorize. Below 32 bits the truncated
   quotient of the doubles is exact (a / b is at least 1 / |a| >= 2^-31 away, relatively,
   from the next integer; the double is within 2^-53). An int64 takes two rounds: the
   double quotient, its exact remainder in wrapping arithmetic, the remainder's quotient,
   and one step either way; 4e7 pairs of every magnitude and the extremes match C's
   division. qdiv gives a = q b + r with q = trunc(a / b), for b other than 0 and -1. */
#define LOOM_QDIV_NARROW(T) \
  static inline T loom_qdiv_##T(T a, T b, T* r) { \
    T q = (T)(int32_t)((double)a / (double)b); *r = (T)(a - q * b); return q; }
LOOM_QDIV_NARROW(int8_t) LOOM_QDIV_NARROW(int16_t) LOOM_QDIV_NARROW(int32_t)
static inline int64_t loom_qdiv_int64_t(int64_t a, int64_t b, int64_t* rem) {
  int bmin = b == INT64_MIN;
  int64_t bs = bmin ? 1 : b;
  double inv = 1.0 / (double)bs, q0 = (double)a * inv;
  q0 = q0 > 0x1.fffffffffffffp+62 ? 0x1.fffffffffffffp+62 : q0;
  int64_t q = (int64_t)q0;
  int64_t r = (int64_t)((uint64_t)a - (uint64_t)q * (uint64_t)bs);
  int64_t q1 = (int64_t)((double)r * inv);
  q = (int64_t)((uint64_t)q + (uint64_t)q1);
  r = (int64_t)((uint64_t)r - (uint64_t)q1 * (uint64_t)bs);
  int64_t ab = bs < 0 ? -bs : bs, sb = bs < 0 ? -1 : 1;
  int up = a >= 0 ? r >= ab : r > 0, down = a >= 0 ? r < 0 : r <= -ab;
  q = up ? q + sb : down ? q - sb : q;
  r = up ? r - ab : down ? r + ab : r;
  *rem = bmin ? (a == INT64_MIN ? 0 : a) : r;
  return bmin ? a == INT64_MIN : q;
}
#define LOOM_INTDIV(T) \
  static inline T loom_tdiv_##T(T a, T b) { T r, q = loom_qdiv_##T(a, b == 0 || b == -1 ? 1 : b, &r); \
    return b == 0 ? 0 : b == -1 ? (T)(0 - (uint64_t)a) : q; } \
  static inline T loom_fdiv_##T(T a, T b) { T r, q = loom_qdiv_##T(a, b == 0 || b == -1 ? 1 : b, &r); \
    q = r != 0 && ((r < 0) != (b < 0)) ? (T)(q - 1) : q; \
    return b == 0 ? 0 : b == -1 ? (T)(0 - (uint64_t)a) : q; } \
  static inline T loom_fmod_##T(T a, T b) { T r; loom_qdiv_##T(a, b == 0 || b == -1 ? 1 : b, &r); \
    return b == 0 || b == -1 ? 0 : r; } \
  static inline T loom_rem_##T(T a, T b) { T r; loom_qdiv_##T(a, b == 0 || b == -1 ? 1 : b, &r); \
    r = r != 0 && ((r < 0) != (b < 0)) ? (T)(r + b) : r; return b == 0 || b == -1 ? 0 : r; } \
  static inline T loom_ipow_##T(T a, T b) { if (b < 0) { if (a == 1) return 1; if (a == -1) return (b & 1) ? -1 : 1; return 0; } \
    T r = 1; while (b) { if (b & 1) r = (T)(r * a); b >>= 1; a = (T)(a * a); } return r; }
LOOM_INTDIV(int8_t) LOOM_INTDIV(int16_t) LOOM_INTDIV(int32_t) LOOM_INTDIV(int64_t)
static inline uint8_t loom_uq(uint8_t a, uint8_t b) { return (uint8_t)(int32_t)((double)a / (double)(b ? b : 1)); }
static inline uint8_t loom_tdiv_uint8_t(uint8_t a, uint8_t b) { return b ? loom_uq(a, b) : 0; }
static inline uint8_t loom_fdiv_uint8_t(uint8_t a, uint8_t b) { return b ? loom_uq(a, b) : 0; }
static inline uint8_t loom_fmod_uint8_t(uint8_t a, uint8_t b) { return b ? (uint8_t)(a - loom_uq(a, b) * b) : 0; }
static inline uint8_t loom_rem_uint8_t(uint8_t a, uint8_t b) { return b ? (uint8_t)(a - loom_uq(a, b) * b) : 0; }
static inline uint8_t loom_ipow_uint8_t(uint8_t a, uint8_t b) { uint8_t r = 1; while (b) { if (b & 1) r *= a; b >>= 1; a *= a; } return r; }
/* The CPU's remainder and floor division of floats (c10's div_floor_floating), as selects,
   over a prelude's fmod of type T with the kernel's strict flag (NOTE [Float fmod]). */
#define LOOM_FLOAT_DIV_FORMS(T, S, FMOD, FLOOR, COPYSIGN) \
  static inline __attribute__((always_inline)) T loom_rem_##S##_k(T a, T b, const int strict, int* seen) { \
    T m = FMOD(a, b, strict, seen); \
    return m != (T)0 && ((b < (T)0) != (m < (T)0)) ? m + b : m; } \
  static inline __attribute__((always_inline)) T loom_fdiv_##S##_k(T a, T b, const int strict, int* seen) { \
    T m = FMOD(a, b, strict, seen), d = (a - m) / b; \
    d = m != (T)0 && ((b < (T)0) != (m < (T)0)) ? d - (T)1 : d; \
    T f = FLOOR(d); \
    f = d - f > (T)0.5 ? f + (T)1 : f; \
    f = d == (T)0 ? COPYSIGN((T)0, a / b) : f; \
    return b == (T)0 ? a / b : f; }
static inline double loom_i2d(int64_t i) { union { int64_t i; double d; } u; u.i = i; return u.d; }
/* NOTE [Float to integer]: C leaves a float outside the integer type's range undefined,
   and an optimizing compiler used that: a vectorized float -> uint8 cast of -2312.5 gave
   another value than at -O0 and than the CPU. These are x86's own conversions, which the
   CPU's kernels run: truncation to int32 (to int64 for int64), the lowest integer for
   anything out of range or NaN, and narrower types keep the low bits of the int32. */
static inline int32_t loom_f2i(float x) { return x >= -0x1p31f && x < 0x1p31f ? (int32_t)x : INT32_MIN; }
static inline int32_t loom_d2i(double x) { return x > -0x1p31 - 1 && x < 0x1p31 ? (int32_t)x : INT32_MIN; }
static inline int64_t loom_f2l(float x) { return x >= -0x1p63f && x < 0x1p63f ? (int64_t)x : INT64_MIN; }
static inline int64_t loom_d2l(double x) { return x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN; }
/* Complex products, quotients and |z| by the plain formulas PyTorch's CPU kernels use
   (c10::complex and its vectorized code), not C's Annex G ones. */
#define LOOM_COMPLEX(T, s) \
  static inline T _Complex loom_cmul##s(T _Complex x, T _Complex y) { \
    T a = __real__ x, b = __imag__ x, c = __real__ y, d = __imag__ y; \
    return __builtin_complex(a * c - b * d, a * d + b * c); } \
  static inline T _Complex loom_cdiv##s(T _Complex x, T _Complex y) { \
    T a = __real__ x, b = __imag__ x, c = __real__ y, d = __imag__ y, n = c * c + d * d; \
    return __builtin_complex((a * c + b * d) / n, (b * c - a * d) / n); } \
  /* torch 2.x's c10::complex quotient (numpy's): scaled by the larger part of y; 0 / 0 */ \
  /* divides part by part */ \
  static inline T _Complex loom_cdivs##s(T _Complex x, T _Complex y) { \
    T a = __real__ x, b = __imag__ x, c = __real__ y, d = __imag__ y; \
    T ac = fabs##s(c), ad = fabs##s(d); \
    if (ac >= ad) { \
      if (ac == 0 && ad == 0) return __builtin_complex(a / ac, b / ad); \
      T rat = d / c, scl = 1 / (c + d * rat); \
      return __builtin_complex((a + b * rat) * scl, (b - a * rat) * scl); } \
    T rat = c / d, scl = 1 / (d + c * rat); \
    return __builtin_complex((a * rat + b) * scl, (b * rat - a) * scl); } \
  static inline T _Complex loom_crecip##s(T _Complex y) { \
    T c = __real__ y, d = __imag__ y, n = c * c + d * d; return __builtin_complex(c / n, -d / n); } \
  static inline T loom_cabs##s(T _Complex x) { T a = __real__ x, b = __imag__ x; return sqrt##s(a * a + b * b); } \
  static inline T _Complex loom_cexp##s(T _Complex x) { \
    T e = exp##s(__real__ x); return __builtin_complex(e * cos##s(__imag__ x), e * sin##s(__imag__ x)); } \
  static inline T _Complex loom_csgn##s(T _Complex x) { \
    T r = loom_cabs##s(x); return r == 0 ? 0 : __builtin_complex(__real__ x / r, __imag__ x / r); } \
  /* torch 2.x's |z| and z / |z|: hypot, no overflow or underflow in the squares */ \
  static inline T loom_chypot##s(T _Complex x) { return hypot##s(__real__ x, __imag__ x); } \
  static inline T _Complex loom_csgnh##s(T _Complex x) { \
    T r = loom_chypot##s(x); return r == 0 ? 0 : __builtin_complex(__real__ x / r, __imag__ x / r); } \
  /* exp(z) - 1 with the real part as expm1(x) cos(y) - 2 sin(y / 2)^2 */ \
  static inline T _Complex loom_cexpm1##s(T _Complex z) { \
    T x = __real__ z, y = __imag__ z, h = sin##s(y / 2); \
    return __builtin_complex(expm1##s(x) * cos##s(y) - 2 * h * h, exp##s(x) * sin##s(y)); } \
  /* log(1 + z), scaled by z / ((1 + z) - 1) for the rounding of 1 + z */ \
  static inline T _Complex loom_clog1p##s(T _Complex z) { \
    T _Complex u = z + 1; if (u == 1) return z; \
    T _Complex l = __builtin_clog##s(u); if (u - 1 == z) return l; \
    return loom_cmul##s(l, loom_cdiv##s(z, u - 1)); }
/* torch 2.x's logaddexp of complex operands (its scalar _log_add_exp_helper): the one
   with the smaller real part, shifted by the other; NaN in either gives NaN; equal infinite
   real parts give the smaller (-inf) or log(exp(x) + exp(y)) (+inf), with C's cexp. */
#define LOOM_COMPLEX_LAE(T, s) \
  static inline T _Complex loom_clae##s(T _Complex x, T _Complex y) { \
    T _Complex lo = y, hi = x; \
    if (y != y) lo = hi = y; \
    else if (x != x) lo = hi = x; \
    else if (__real__ x < __real__ y) { lo = x; hi = y; } \
    if (lo != lo) return __builtin_complex(__builtin_nan##s(""), __builtin_nan##s("")); \
    if (!isfinite(__real__ lo) && __real__ lo == __real__ hi) \
      return __real__ lo < 0 ? lo : __builtin_clog##s(__builtin_cexp##s(lo) + __builtin_cexp##s(hi)); \
    return loom_clog1p##s(__builtin_cexp##s(lo - hi)) + hi; }
LOOM_COMPLEX(float, f) LOOM_COMPLEX(double, )
LOOM_COMPLEX_LAE(float, f) LOOM_COMPLEX_LAE(double, )
typedef _Complex _Float16 loom_chalf;
static inline float _Complex loom_rch(float _Complex z) { return (float _Complex)(loom_chalf)z; }
static inline void loom_fault(int64_t* f, int64_t check, int64_t value) {
  int64_t none = 0;
  if (__atomic_compare_exchange_n(&f[0], &none, -1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    f[1] = value;
    __atomic_store_n(&f[0], check + 1, __ATOMIC_RELEASE);
  }
}
static inline uint64_t loom_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL; return z ^ (z >> 31);
}
static inline uint64_t loom_rand64(uint64_t seed, uint64_t i) { return loom_mix(loom_mix(seed + 0x9e3779b97f4a7c15ULL) ^ (i * 0xd1b54a32d192ed03ULL)); }
static inline double loom_uniform(uint64_t seed, uint64_t i) { return (double)(loom_rand64(seed, i) >> 11) * 0x1.0p-53; }
static inline float loom_uniformf(uint64_t seed, uint64_t i) { return (float)(loom_rand64(seed, i) >> 40) * 0x1.0p-24f; }
static inline double loom_normal(uint64_t seed, uint64_t i) {
  double u1 = 1.0 - loom_uniform(seed, 2 * i), u2 = loom_uniform(seed, 2 * i + 1);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
/* log(e^x + e^y), logcumsumexp's step on the running value y, as the CPU takes it: a NaN y
   wins, and equal infinities give x. */
#define LOOM_LAE(name, T, S)                                   \
  static inline T name(T x, T y) {                             \
    const T lo = y != y ? y : (y < x ? y : x);                 \
    const T hi = y != y ? y : (x < y ? y : x);                 \
    if (lo != hi || isfinite(lo)) return log1p##S(exp##S(lo - hi)) + hi; \
    return x;                                                  \
  }
LOOM_LAE(loom_lae, double, ) LOOM_LAE(loom_laef, float, f)
)";
}

// NOTE: parsing <stdint.h> and <math.h> was a fifth of a small kernel's compile time;
// kernels get the few types, limits and libm declarations they use from this instead.
const char* c_libc_decls() {
  return R"(typedef __INT8_TYPE__ int8_t; typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t; typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t; typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t; typedef __UINT64_TYPE__ uint64_t;
#define INT8_MIN (-__INT8_MAX__ - 1)
#define INT16_MIN (-__INT16_MAX__ - 1)
#define INT32_MIN (-__INT32_MAX__ - 1)
#define INT64_MIN (-__INT64_MAX__ - 1)
#define INT8_MAX __INT8_MAX__
#define INT16_MAX __INT16_MAX__
#define INT32_MAX __INT32_MAX__
#define INT64_MAX __INT64_MAX__
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define isnan(x) __builtin_isnan(x)
/* Iterations of an output loop are independent: gcc's ivdep, clang's assume_safety (clang
   ignores gcc's, and kept pooling windows scalar: 5x slower). */
#ifdef __clang__
#define LOOM_IVDEP _Pragma("clang loop vectorize(assume_safety) ")
#else
#define LOOM_IVDEP _Pragma("GCC ivdep")
#endif
/* NOTE [Lane loops]: a reduction's lane loop (one partial accumulator per lane) is for
   the vectorizer, as one vector iteration. clang 16 unrolled a short one whole before
   vectorizing it, then paired its lanes two by two: row sums, maxima and sums of squares
   ran on 2-float vectors. Unrolling off alone kept the accumulators in memory; at the
   lanes' own vector width the loop is one iteration and they stay in registers. x.sum()
   over 16M floats 9.1-10.3 -> 3.2-5.8 ms, a row sum of 4096x4096 1.7-3.6 -> 1.4-2.3 ms. */
#ifdef __clang__
#define LOOM_PRAGMA(x) _Pragma(#x)
#define LOOM_LANES(n) _Pragma("omp simd") LOOM_PRAGMA(clang loop unroll(disable) vectorize_width(n) interleave_count(1))
#else
#define LOOM_LANES(n) _Pragma("omp simd")
#endif
/* NOTE [Unpredictable selects]: a select whose other operand costs a load and a divide
   (max pooling's gradient: the window's gradient where the argmax index names the element,
   else 0) became a branch in clang's scalar code, mispredicted on random indices: the
   CNN's third pool gradient took 1.22 ms on one thread, 0.53 with the hint. */
#if defined(__clang__)
#define LOOM_UNPREDICTABLE(c) __builtin_unpredictable(c)
#else
#define LOOM_UNPREDICTABLE(c) (c)
#endif
#define LOOM_LIBM1(n) double n(double); float n##f(float);
#define LOOM_LIBM2(n) double n(double, double); float n##f(float, float);
LOOM_LIBM1(fabs) LOOM_LIBM1(exp) LOOM_LIBM1(exp2) LOOM_LIBM1(expm1) LOOM_LIBM1(log)
LOOM_LIBM1(log2) LOOM_LIBM1(log10) LOOM_LIBM1(log1p) LOOM_LIBM1(sqrt) LOOM_LIBM1(sin)
LOOM_LIBM1(cos) LOOM_LIBM1(tan) LOOM_LIBM1(asin) LOOM_LIBM1(acos) LOOM_LIBM1(atan)
LOOM_LIBM1(sinh) LOOM_LIBM1(cosh) LOOM_LIBM1(tanh) LOOM_LIBM1(erf) LOOM_LIBM1(floor)
LOOM_LIBM1(ceil) LOOM_LIBM1(nearbyint) LOOM_LIBM1(trunc) LOOM_LIBM1(round) LOOM_LIBM1(rint)
LOOM_LIBM2(fmod) LOOM_LIBM2(pow) LOOM_LIBM2(atan2) LOOM_LIBM2(copysign) LOOM_LIBM2(fmin)
LOOM_LIBM2(fmax) LOOM_LIBM1(acosh) LOOM_LIBM1(asinh) LOOM_LIBM1(atanh) LOOM_LIBM1(erfc)
LOOM_LIBM2(nextafter) LOOM_LIBM2(hypot)
)";
}

// NOTE [Streaming stores] (render_c.cpp): a block of results goes from the stack to the
// output with non-temporal stores, which write whole cache lines without reading them
// first; the kernel ends with a store fence so that the pool's release covers them.
const char* c_stream_prelude() {
  return R"(static inline void loom_stream(void* dst, const void* src, int64_t n) {
  char* d = (char*)dst; const char* s = (const char*)src;
#if defined(__AVX__) || defined(__SSE2__)
#if defined(__AVX512F__)
  typedef long long loom_vs __attribute__((vector_size(64)));
#elif defined(__AVX__)
  typedef long long loom_vs __attribute__((vector_size(32)));
#else
  typedef long long loom_vs __attribute__((vector_size(16)));
#endif
#if defined(__clang__)
#define LOOM_NT(p, v) __builtin_nontemporal_store((v), (p))
#elif defined(__AVX512F__)
#define LOOM_NT(p, v) __builtin_ia32_movntdq512((p), (v))
#elif defined(__AVX__)
#define LOOM_NT(p, v) __builtin_ia32_movntdq256((p), (v))
#else
#define LOOM_NT(p, v) __builtin_ia32_movntdq((p), (v))
#endif
  const int64_t w = (int64_t)sizeof(loom_vs);
  int64_t head = (int64_t)(-(uint64_t)d & (uint64_t)(w - 1));
  if (head > n) head = n;
  if (head) __builtin_memcpy(d, s, head);  /* no call where the block is aligned */
  d += head; s += head; n -= head;
  for (; n >= w; n -= w, d += w, s += w) {
    loom_vs v;
    __builtin_memcpy(&v, s, w);
    LOOM_NT((loom_vs*)d, v);
  }
#undef LOOM_NT
#endif
  if (n) __builtin_memcpy(d, s, n);
}
static inline void loom_sfence(void) {
#if defined(__SSE2__)
  __builtin_ia32_sfence();
#endif
}
)";
}

namespace {

bool single(DType t) { return t != DType::Float64 && t != DType::Complex128; }

// libm function name for the compute type of a float dtype.
std::string fn(const char* name, DType t) { return single(t) ? std::string(name) + "f" : name; }

// Loom's own vectorizable float function (c_math_prelude) where there is one; libm's else.
// Of float64, those c_double_math_prelude has.
std::string vec_fn(const char* name, DType t) {
  if (single(t)) return std::string("loom_") + name + "f";
  for (const char* own : {"exp", "expm1", "tanh", "sinh", "cosh", "log", "log1p", "atan", "atan2",
                          "asin", "acos"})
    if (std::string(name) == own) return std::string("loom_") + name + "d";
  return name;
}

// Results are rounded to their dtype after every op, as eager computes them.
std::string rounded(const std::string& e, DType out) {
  if (out == DType::Float16) return "loom_rh(" + e + ")";
  if (out == DType::BFloat16) return "loom_rb(" + e + ")";
  if (out == DType::Bool) return "(uint8_t)((" + e + ") != 0)";
  return "(" + std::string(compute_ctype(out)) + ")(" + e + ")";
}

std::string int_helper(const char* name, DType t) {
  return std::string("loom_") + name + "_" + storage_ctype(t);
}

std::atomic<bool> scaled_division{false}, hypot_abs{false};

}  // namespace

void set_complex_forms(ComplexForms forms) {
  scaled_division.store(forms.scaled_division);
  hypot_abs.store(forms.hypot_abs);
}
ComplexForms complex_forms() { return {scaled_division.load(), hypot_abs.load()}; }

namespace {

// A <complex.h> function as its GCC builtin (no header needed), or a prelude helper.
std::string cfn(const char* name, DType t) {
  return std::string("__builtin_") + name + (t != DType::Complex128 ? "f" : "");
}
std::string chelper(const char* name, DType t) {
  return std::string("loom_") + name + (t != DType::Complex128 ? "f" : "");
}

// Elementwise ops on complex arguments; the ops CPU PyTorch has no complex kernel for are
// rejected before they reach a kernel (aten/ops_elementwise.cpp).
std::string c_complex_op(Op op, DType in, const std::vector<std::string>& a) {
  auto x = [&](int i) { return "(" + a[i] + ")"; };
  auto call = [&](const std::string& f, int n) {
    std::string e = f + "(" + a[0];
    for (int i = 1; i < n; ++i) e += ", " + a[i];
    return e + ")";
  };
  // log(z) / log(b), divided part by part as the CPU kernels do.
  auto log_base = [&](double b) {
    return "(" + cfn("clog", in) + x(0) + " / " +
           c_literal(Scalar::of_float(std::log(b)), real_part_dtype(in)) + ")";
  };
  // 1 / z: a quotient as Op::Div takes it (2.x's scalar forms divide 1 by z).
  auto recip = [&](const std::string& z) {
    if (complex_forms().scaled_division) return chelper("cdivs", in) + "(1, " + z + ")";
    return chelper("crecip", in) + "(" + z + ")";
  };
  switch (op) {
    case Op::Neg: return "-" + x(0);
    case Op::Abs: return call(chelper(complex_forms().hypot_abs ? "chypot" : "cabs", in), 1);
    case Op::Real: return call(cfn("creal", in), 1);
    case Op::Imag: return call(cfn("cimag", in), 1);
    case Op::Conj: return call(cfn("conj", in), 1);
    case Op::Exp: return call(chelper("cexp", in), 1);
    case Op::Exp2: {  // exp(ln(2) z), both parts scaled
      const std::string ln2 = c_literal(Scalar::of_float(std::log(2.0)), real_part_dtype(in));
      return chelper("cexp", in) + "(" + ln2 + " * " + x(0) + ")";
    }
    case Op::Expm1: return call(chelper("cexpm1", in), 1);
    case Op::Log: return call(cfn("clog", in), 1);
    case Op::Log1p: return call(chelper("clog1p", in), 1);
    case Op::Log2: return log_base(2);
    case Op::Log10: return log_base(10);
    case Op::Sqrt: return call(cfn("csqrt", in), 1);
    case Op::Rsqrt: return recip(cfn("csqrt", in) + x(0));
    case Op::Sin: return call(cfn("csin", in), 1);
    case Op::Cos: return call(cfn("ccos", in), 1);
    case Op::Tan: return call(cfn("ctan", in), 1);
    case Op::Asin: return call(cfn("casin", in), 1);
    case Op::Acos: return call(cfn("cacos", in), 1);
    case Op::Atan: return call(cfn("catan", in), 1);
    case Op::Acosh: return call(cfn("cacosh", in), 1);
    case Op::Asinh: return call(cfn("casinh", in), 1);
    case Op::Atanh: return call(cfn("catanh", in), 1);
    case Op::Sinh: return call(cfn("csinh", in), 1);
    case Op::Cosh: return call(cfn("ccosh", in), 1);
    case Op::Tanh: return call(cfn("ctanh", in), 1);
    case Op::Sigmoid: return recip("(1 + " + chelper("cexp", in) + "(-" + x(0) + "))");
    case Op::Reciprocal: return recip(a[0]);
    case Op::Sign:  // sgn: z / |z|
      return call(chelper(complex_forms().hypot_abs ? "csgnh" : "csgn", in), 1);
    case Op::IsNan: return "(" + x(0) + " != " + x(0) + ")";
    case Op::IsInf:
      return "(isinf(" + cfn("creal", in) + x(0) + ") || isinf(" + cfn("cimag", in) + x(0) + "))";
    case Op::IsFinite:
      return "(isfinite(" + cfn("creal", in) + x(0) + ") && isfinite(" + cfn("cimag", in) + x(0) +
             "))";
    case Op::LogicalNot: return "(" + x(0) + " == 0)";
    case Op::Add: return x(0) + " + " + x(1);
    case Op::Sub: return x(0) + " - " + x(1);
    case Op::Mul: return call(chelper("cmul", in), 2);
    case Op::Div: return call(chelper(complex_forms().scaled_division ? "cdivs" : "cdiv", in), 2);
    case Op::Pow: return call(cfn("cpow", in), 2);
    case Op::LogAddExp: return call(chelper("clae", in), 2);
    case Op::Eq: return x(0) + " == " + x(1);
    case Op::Ne: return x(0) + " != " + x(1);
    case Op::LogicalAnd: return "(" + x(0) + " != 0) && (" + x(1) + " != 0)";
    case Op::LogicalOr: return "(" + x(0) + " != 0) || (" + x(1) + " != 0)";
    case Op::LogicalXor: return "(" + x(0) + " != 0) != (" + x(1) + " != 0)";
    case Op::Where: return "(LOOM_UNPREDICTABLE(" + x(0) + ") ? " + x(1) + " : " + x(2) + ")";
    default:
      throw std::logic_error(std::string("loom: the C renderer cannot render ") + op_name(op) +
                             " on " + dtype_name(in));
  }
}

}  // namespace

std::string c_storage_type(DType t) {
  if (t == DType::Float16) return "loom_half";
  return t == DType::Complex32 ? "loom_chalf" : storage_ctype(t);
}

std::string c_load(DType t, const std::string& lv) {
  if (t == DType::Float16) return "(float)" + lv;
  if (t == DType::Complex32) return "(float _Complex)" + lv;
  if (t == DType::BFloat16) return "loom_bf2f(" + lv + ")";
  return lv;
}

std::string c_store(DType t, const std::string& v) {
  if (t == DType::Float16) return "(loom_half)(" + v + ")";
  if (t == DType::Complex32) return "(loom_chalf)(" + v + ")";
  if (t == DType::BFloat16) return "loom_f2bf(" + v + ")";
  if (t == DType::Bool) return "(uint8_t)((" + v + ") != 0)";
  return "(" + std::string(storage_ctype(t)) + ")(" + v + ")";
}

std::string c_cast(DType from, DType to, const std::string& a) {
  if (from == to) return a;
  // PyTorch converts a complex value to any real dtype, bool included, by its real part.
  if (is_complex(from) && !is_complex(to))
    return c_cast(real_part_dtype(from), to, cfn("creal", from) + "(" + a + ")");
  if (to == DType::Bool) return "(uint8_t)((" + a + ") != 0)";
  if (to == DType::Float16) return "loom_rh((float)(" + a + "))";
  if (to == DType::Complex32) return "loom_rch((float _Complex)(" + a + "))";
  if (to == DType::BFloat16) return "loom_rb((float)(" + a + "))";
  if (is_floating(from) && !is_complex(to) && !is_floating(to)) {  // NOTE [Float to integer]
    const bool wide = to == DType::Int64, dbl = from == DType::Float64;
    const std::string f = wide ? (dbl ? "loom_d2l(" : "loom_f2l(") : (dbl ? "loom_d2i(" : "loom_f2i(");
    return "(" + std::string(compute_ctype(to)) + ")" + f + a + ")";
  }
  return "(" + std::string(compute_ctype(to)) + ")(" + a + ")";
}

std::string c_op(Op op, DType in, DType out, const std::vector<std::string>& a) {
  const bool flt = is_floating(in);
  const std::string T = compute_ctype(in);
  auto x = [&](int i) { return "(" + a[i] + ")"; };
  std::string e;
  if (is_complex(in)) {
    e = c_complex_op(op, in, a);
    if (out == DType::Bool) return "(uint8_t)((" + e + ") != 0)";
    if (out == DType::Complex32) return "loom_rch(" + e + ")";
    if (out == DType::Float16) return "loom_rh(" + e + ")";
    return "(" + std::string(compute_ctype(out)) + ")(" + e + ")";
  }
  switch (op) {
    case Op::Neg: e = "-" + x(0); break;
    case Op::Abs: e = flt ? fn("fabs", in) + x(0) : "(" + x(0) + " < 0 ? -" + x(0) + " : " + x(0) + ")"; break;
    case Op::Exp: e = vec_fn("exp", in) + x(0); break;
    case Op::Exp2: e = vec_fn("exp2", in) + x(0); break;
    case Op::Expm1: e = vec_fn("expm1", in) + x(0); break;
    case Op::Log: e = vec_fn("log", in) + x(0); break;
    case Op::Log2: e = vec_fn("log2", in) + x(0); break;
    case Op::Log10: e = vec_fn("log10", in) + x(0); break;
    case Op::Log1p: e = vec_fn("log1p", in) + x(0); break;
    case Op::Sqrt: e = fn("sqrt", in) + x(0); break;
    case Op::Rsqrt: e = "(1 / " + fn("sqrt", in) + x(0) + ")"; break;
    case Op::Sin:
    case Op::Cos:
    case Op::Tan: return c_trig_call(op, in, out, a[0]);
    case Op::Asin: e = vec_fn("asin", in) + x(0); break;
    case Op::Acos: e = vec_fn("acos", in) + x(0); break;
    case Op::Atan: e = vec_fn("atan", in) + x(0); break;
    case Op::Sinh: e = vec_fn("sinh", in) + x(0); break;
    case Op::Cosh: e = vec_fn("cosh", in) + x(0); break;
    case Op::Tanh: e = vec_fn("tanh", in) + x(0); break;
    case Op::Erf: e = vec_fn("erf", in) + x(0); break;
    case Op::NormalCdf:
      e = single(in) ? "loom_ncdff" + x(0)
                     : "(0.5 * (1 + erf(" + x(0) + " * 0.70710678118654752440)))";
      break;
    case Op::Lgamma: e = (single(in) ? "loom_lgammaf" : "loom_lgamma") + x(0); break;
    case Op::Digamma: e = (single(in) ? "loom_digammaf" : "loom_digamma") + x(0); break;
    case Op::Trigamma: e = (single(in) ? "loom_trigammaf" : "loom_trigamma") + x(0); break;
    case Op::Zeta: e = "((" + T + ")loom_zeta(" + a[0] + ", " + a[1] + "))"; break;
    case Op::Acosh: e = vec_fn("acosh", in) + x(0); break;
    case Op::Asinh: e = vec_fn("asinh", in) + x(0); break;
    case Op::Atanh: e = vec_fn("atanh", in) + x(0); break;
    case Op::Erfc: e = single(in) ? "loom_erfcf" + x(0) : "erfc" + x(0); break;
    case Op::Erfinv: e = single(in) ? "loom_erfinvf" + x(0) : "loom_erfinv" + x(0); break;
    case Op::Ndtri: e = "((" + T + ")loom_ndtri" + x(0) + ")"; break;
    case Op::Erfcx: e = "((" + T + ")loom_erfcx" + x(0) + ")"; break;
    case Op::I0: e = "((" + T + ")loom_i0" + x(0) + ")"; break;
    case Op::I0e: e = "((" + T + ")loom_i0e" + x(0) + ")"; break;
    case Op::I1: e = "((" + T + ")loom_i1" + x(0) + ")"; break;
    case Op::I1e: e = "((" + T + ")loom_i1e" + x(0) + ")"; break;
    case Op::FrexpMantissa: e = (single(in) ? "loom_frexp_mf" : "loom_frexp_m") + x(0); break;
    case Op::FrexpExponent: e = (single(in) ? "loom_frexp_ef" : "loom_frexp_e") + x(0); break;
    case Op::CopySign: e = fn("copysign", in) + "(" + a[0] + ", " + a[1] + ")"; break;
    case Op::NextAfter:
      // float16 and bfloat16 values step by their own bit pattern (the CPU's c10::nextafter).
      e = in == DType::BFloat16  ? "loom_nextafter_bf(" + a[0] + ", " + a[1] + ")"
          : in == DType::Float16 ? "loom_nextafter_h(" + a[0] + ", " + a[1] + ")"
                                 : fn("nextafter", in) + "(" + a[0] + ", " + a[1] + ")";
      break;
    case Op::Gcd: e = int_helper("gcd", in) + "(" + a[0] + ", " + a[1] + ")"; break;
    case Op::Sigmoid: e = "(1 / (1 + " + vec_fn("exp", in) + "(-" + x(0) + ")))"; break;
    case Op::Relu: e = "((" + x(0) + " > 0 || " + x(0) + " != " + x(0) + ") ? " + x(0) + " : 0)"; break;
    case Op::Floor: e = flt ? fn("floor", in) + x(0) : x(0); break;
    case Op::Ceil: e = flt ? fn("ceil", in) + x(0) : x(0); break;
    case Op::Round: e = flt ? fn("nearbyint", in) + x(0) : x(0); break;
    case Op::Trunc: e = flt ? fn("trunc", in) + x(0) : x(0); break;
    case Op::Frac: e = "(" + x(0) + " - " + fn("trunc", in) + x(0) + ")"; break;
    case Op::Sign:
      e = in == DType::Bool ? x(0) : "(" + T + ")((0 < " + x(0) + ") - (" + x(0) + " < 0))";
      break;
    case Op::Reciprocal: e = "(1 / " + x(0) + ")"; break;
    case Op::IsNan: e = "(" + x(0) + " != " + x(0) + ")"; break;
    case Op::IsInf: e = flt ? "(isinf" + x(0) + " != 0)" : "0"; break;
    case Op::IsFinite: e = flt ? "(isfinite" + x(0) + " != 0)" : "1"; break;
    case Op::LogicalNot: e = "(!" + x(0) + ")"; break;
    case Op::BitwiseNot: e = in == DType::Bool ? "(!" + x(0) + ")" : "(~" + x(0) + ")"; break;
    case Op::Add: e = x(0) + " + " + x(1); break;
    case Op::Sub: e = x(0) + " - " + x(1); break;
    case Op::Mul: e = x(0) + " * " + x(1); break;
    case Op::Div: e = x(0) + " / " + x(1); break;
    case Op::TruncDiv:
      e = flt ? fn("trunc", in) + "(" + x(0) + " / " + x(1) + ")"
              : int_helper("tdiv", in) + "(" + a[0] + ", " + a[1] + ")";
      break;
    // Floats' take the kernel's strict flag (NOTE [Float fmod]).
    case Op::FloorDiv:
      e = !flt ? int_helper("fdiv", in) + "(" + a[0] + ", " + a[1] + ")"
          : single(in) ? "loom_fdiv_f32_k(" + a[0] + ", " + a[1] + ", strict, &loom_seen)"
                       : "loom_fdiv_f64_k(" + a[0] + ", " + a[1] + ", strict, &loom_seen)";
      break;
    case Op::Remainder:
      e = !flt ? int_helper("rem", in) + "(" + a[0] + ", " + a[1] + ")"
          : single(in) ? "loom_rem_f32_k(" + a[0] + ", " + a[1] + ", strict, &loom_seen)"
                       : "loom_rem_f64_k(" + a[0] + ", " + a[1] + ", strict, &loom_seen)";
      break;
    case Op::Fmod:
      e = !flt ? int_helper("fmod", in) + "(" + a[0] + ", " + a[1] + ")"
          : single(in) ? "loom_fmodf_k(" + a[0] + ", " + a[1] + ", strict, &loom_seen)"
                       : "loom_fmodd_k(" + a[0] + ", " + a[1] + ", strict, &loom_seen)";
      break;
    case Op::Pow:  // NOTE [Float pow]
      e = flt ? (single(in) ? "loom_powfd" : "pow") + std::string("(") + a[0] + ", " + a[1] + ")"
              : int_helper("ipow", in) + "(" + a[0] + ", " + a[1] + ")";
      break;
    case Op::Atan2: e = vec_fn("atan2", in) + "(" + a[0] + ", " + a[1] + ")"; break;
    case Op::Maximum:
      e = flt ? "(" + x(0) + " != " + x(0) + " ? " + x(0) + " : (" + x(1) + " != " + x(1) + " || " +
                    x(1) + " > " + x(0) + ") ? " + x(1) + " : " + x(0) + ")"
              : "(" + x(0) + " > " + x(1) + " ? " + x(0) + " : " + x(1) + ")";
      break;
    case Op::Minimum:
      e = flt ? "(" + x(0) + " != " + x(0) + " ? " + x(0) + " : (" + x(1) + " != " + x(1) + " || " +
                    x(1) + " < " + x(0) + ") ? " + x(1) + " : " + x(0) + ")"
              : "(" + x(0) + " < " + x(1) + " ? " + x(0) + " : " + x(1) + ")";
      break;
    case Op::Eq: e = x(0) + " == " + x(1); break;
    case Op::Ne: e = x(0) + " != " + x(1); break;
    case Op::Lt: e = x(0) + " < " + x(1); break;
    case Op::Le: e = x(0) + " <= " + x(1); break;
    case Op::Gt: e = x(0) + " > " + x(1); break;
    case Op::Ge: e = x(0) + " >= " + x(1); break;
    case Op::LogicalAnd: e = "(" + x(0) + " != 0) && (" + x(1) + " != 0)"; break;
    case Op::LogicalOr: e = "(" + x(0) + " != 0) || (" + x(1) + " != 0)"; break;
    case Op::LogicalXor: e = "(" + x(0) + " != 0) != (" + x(1) + " != 0)"; break;
    case Op::BitAnd: e = x(0) + " & " + x(1); break;
    case Op::BitOr: e = x(0) + " | " + x(1); break;
    case Op::BitXor: e = x(0) + " ^ " + x(1); break;
    case Op::Shl: {
      int bits = itemsize(in) * 8;
      e = "((" + x(1) + " < 0 || " + x(1) + " >= " + std::to_string(bits) + ") ? 0 : (" + T +
          ")((uint64_t)" + x(0) + " << " + x(1) + "))";
      break;
    }
    case Op::Shr: {
      int bits = itemsize(in) * 8;
      std::string sat = is_signed(in) ? "(" + x(0) + " < 0 ? -1 : 0)" : "0";
      e = "((" + x(1) + " < 0 || " + x(1) + " >= " + std::to_string(bits) + ") ? " + sat +
          " : (" + x(0) + " >> " + x(1) + "))";
      break;
    }
    case Op::Where: e = "(LOOM_UNPREDICTABLE(" + x(0) + ") ? " + x(1) + " : " + x(2) + ")"; break;
    case Op::MulAdd:  // half types compute in float, one rounding there, as the CPU's
      e = std::string(T == std::string("double") ? "__builtin_fma(" : "__builtin_fmaf(") + a[0] +
          ", " + a[1] + ", " + a[2] + ")";
      break;
    case Op::Complex:
      e = "__builtin_complex((" + T + ")" + x(0) + ", (" + T + ")" + x(1) + ")";
      break;
    default:
      throw std::logic_error(std::string("loom: the C renderer cannot render ") + op_name(op));
  }
  return rounded(e, out);
}

std::string c_trig_call(Op op, DType in, DType out, const std::string& a) {
  const char* name = op == Op::Sin ? "loom_sin" : op == Op::Cos ? "loom_cos" : "loom_tan";
  return rounded(std::string(name) + (single(in) ? "f" : "d") + "_k(" + a + ", strict, &loom_seen)",
                 out);
}

std::string c_reduce_init(ReduceKind k, DType t) {
  const bool flt = is_floating(t);
  switch (k) {
    case ReduceKind::Sum: case ReduceKind::Any: return "0";
    case ReduceKind::Prod: case ReduceKind::All: return "1";
    case ReduceKind::Max: case ReduceKind::ArgMax:
      if (flt) return t == DType::Float64 ? "(-__builtin_inf())" : "(-__builtin_inff())";
      return t == DType::Bool || t == DType::UInt8 ? "0" : std::string("INT") + std::to_string(itemsize(t) * 8) + "_MIN";
    case ReduceKind::LogSumExp: return t == DType::Float64 ? "(-__builtin_inf())" : "(-__builtin_inff())";
    case ReduceKind::Min: case ReduceKind::ArgMin:
      if (flt) return t == DType::Float64 ? "__builtin_inf()" : "__builtin_inff()";
      if (t == DType::Bool) return "1";
      if (t == DType::UInt8) return "255";
      return std::string("INT") + std::to_string(itemsize(t) * 8) + "_MAX";
  }
  return "0";
}

std::string c_reduce_step(ReduceKind k, DType t, const std::string& acc, const std::string& v) {
  switch (k) {
    // A bool sum is C++'s bool + bool stored back as bool: an or (the accumulator stays 0/1
    // for whatever reads it before the store normalizes it).
    case ReduceKind::Sum:
      if (t == DType::Bool) return acc + " = " + acc + " | " + v + ";";
      return acc + " = " + acc + " + " + v + ";";
    case ReduceKind::Prod:
      if (is_complex(t)) return acc + " = " + chelper("cmul", t) + "(" + acc + ", " + v + ");";
      return acc + " = " + acc + " * " + v + ";";
    case ReduceKind::Max: case ReduceKind::Min:
      return acc + " = " + c_reduce_combine(k, t, acc, v) + ";";
    case ReduceKind::Any: return acc + " = " + acc + " | (" + v + " != 0);";
    case ReduceKind::All: return acc + " = " + acc + " & (" + v + " != 0);";
    case ReduceKind::LogSumExp:
      if (is_complex(t)) return acc + " = " + chelper("clae", t) + "(" + v + ", " + acc + ");";
      return acc + " = " + (t == DType::Float64 ? "loom_lae(" : "loom_laef(") + v + ", " + acc + ");";
    default: throw std::logic_error("loom: arg reductions are rendered by the kernel");
  }
}

std::string c_reduce_combine(ReduceKind k, DType t, const std::string& acc, const std::string& v) {
  switch (k) {
    case ReduceKind::Sum: return t == DType::Bool ? acc + " | " + v : acc + " + " + v;
    case ReduceKind::Prod: return acc + " * " + v;
    // NOTE [NaN-sticky max]: a NaN on either side wins. LOOM_MAX computes the larger, then
    // takes v where v is NaN: two selects that gcc makes branch-free and vectorizes. The
    // single select on `v > acc || v != v` (or the same nested in one conditional) stays
    // a branch, mispredicted on real data: a 2x2 max pool ran 14x slower that way.
    case ReduceKind::Max: return "LOOM_MAX(" + acc + ", " + v + ")";
    case ReduceKind::Min: return "LOOM_MIN(" + acc + ", " + v + ")";
    case ReduceKind::Any: return "(" + acc + " | (" + v + " != 0))";
    case ReduceKind::All: return "(" + acc + " & (" + v + " != 0))";
    default: throw std::logic_error("loom: arg reductions are rendered by the kernel");
  }
}

}  // namespace loom
