// The orthogonal polynomials of torch.special (Chebyshev T/U/V/W and their shifted forms,
// Hermite H/He, Laguerre L, Legendre P) as C functions of (x, n), evaluated as the CPU
// does: the degree is n truncated to int64, values at the interval's ends are exact,
// high degrees inside the interval use the trigonometric closed form, the rest the
// three-term recurrence, all in the tensor's own float type.
#include "codegen/ops_c.h"

namespace loom {

const char* c_polynomial_prelude() {
  return R"(/* r = 2y q - p from p = P0 = 1 and q = P1, up to degree n >= 2. */
#define LOOM_CHEBYSHEV_STEPS(T, S)                                                       \
  static T loom_cheb_steps##S(T y, T q, int64_t n) {                                      \
    T p = 1, r = q;                                                                       \
    for (int64_t k = 2; k <= n; k++) {                                                    \
      r = (y + y) * q - p;                                                                \
      p = q;                                                                              \
      q = r;                                                                              \
    }                                                                                     \
    return r;                                                                             \
  }
/* Chebyshev polynomials of y, where y = x (ends at |x| = 1) or y = 2x - 1 (shifted, ends
   at x = 0 and 1); above degree `trig` inside the interval, the closed forms in
   theta = acos(y). */
#define LOOM_CHEBYSHEV(T, S)                                                             \
  LOOM_CHEBYSHEV_STEPS(T, S)                                                              \
  static T loom_cheb_t##S(T y, int64_t n, int trig) {                                     \
    if (n > trig && fabs##S(y) < 1) return cos##S(n * acos##S(y));                        \
    if (n == 0) return 1;                                                                 \
    return n == 1 ? y : loom_cheb_steps##S(y, y, n);                                      \
  }                                                                                       \
  static T loom_cheb_u##S(T y, int64_t n, int trig) {                                     \
    if (n > trig && fabs##S(y) < 1) {                                                     \
      if (sin##S(acos##S(y)) != 0) return sin##S((n + 1) * acos##S(y)) / sin##S(acos##S(y)); \
      return (n + 1) * cos##S((n + 1) * acos##S(y)) / y;                                  \
    }                                                                                     \
    if (n == 0) return 1;                                                                 \
    return n == 1 ? y + y : loom_cheb_steps##S(y, y + y, n);                              \
  }                                                                                       \
  /* V and W: inside the interval, except where the half angle's sine (V) or cosine (W)  \
     is 1, the closed form; there, the value at the interval's end. */                    \
  static T loom_cheb_v##S(T y, int64_t n, int trig, T at_end) {                           \
    if (n > trig && fabs##S(y) < 1) {                                                     \
      if (sin##S(acos##S(y) / 2) != 1)                                                    \
        return cos##S((n + (T)0.5) * acos##S(y)) / cos##S(acos##S(y) / 2);                \
      return at_end;                                                                      \
    }                                                                                     \
    if (n == 0) return 1;                                                                 \
    return n == 1 ? y + y - 1 : loom_cheb_steps##S(y, y + y - 1, n);                      \
  }                                                                                       \
  static T loom_cheb_w##S(T y, int64_t n, int trig, T at_end) {                           \
    if (n > trig && fabs##S(y) < 1) {                                                     \
      if (cos##S(acos##S(y) / 2) != 1)                                                    \
        return sin##S((n + (T)0.5) * acos##S(y)) / sin##S(acos##S(y) / 2);                \
      return at_end;                                                                      \
    }                                                                                     \
    if (n == 0) return 1;                                                                 \
    return n == 1 ? y + y + 1 : loom_cheb_steps##S(y, y + y + 1, n);                      \
  }                                                                                       \
  static T loom_poly0##S(T x, T d) { /* T */                                              \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (fabs##S(x) == 1) return x > 0 || n % 2 == 0 ? 1 : -1;                             \
    return loom_cheb_t##S(x, n, 6);                                                       \
  }                                                                                       \
  static T loom_poly1##S(T x, T d) { /* U */                                              \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (fabs##S(x) == 1) return x > 0 || n % 2 == 0 ? (T)(n + 1) : (T)(-(n + 1));         \
    return loom_cheb_u##S(x, n, 8);                                                       \
  }                                                                                       \
  static T loom_poly2##S(T x, T d) { /* V */                                              \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    const T odd_end = n % 2 == 0 ? (T)(n + n + 1) : (T)(-(n + n + 1));                    \
    if (fabs##S(x) == 1) return x > 0 ? 1 : odd_end;                                      \
    return loom_cheb_v##S(x, n, 8, odd_end);                                              \
  }                                                                                       \
  static T loom_poly3##S(T x, T d) { /* W */                                              \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    const T low_end = n % 2 == 0 ? 1 : -1;                                                \
    if (fabs##S(x) == 1) return x > 0 ? (T)(n + n + 1) : low_end;                         \
    return loom_cheb_w##S(x, n, 8, x > 0 ? (T)(n + n + 1) : low_end);                     \
  }                                                                                       \
  static T loom_poly4##S(T x, T d) { /* shifted T */                                      \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (x == 1) return 1;                                                                 \
    if (x == 0) return n % 2 == 0 ? 1 : -1;                                               \
    return loom_cheb_t##S(x + x - 1, n, 6);                                               \
  }                                                                                       \
  static T loom_poly5##S(T x, T d) { /* shifted U */                                      \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (x == 1) return (T)(n + 1);                                                        \
    if (x == 0) return n % 2 == 0 ? (T)(n + 1) : (T)(-(n + 1));                           \
    return loom_cheb_u##S(x + x - 1, n, 6);                                               \
  }                                                                                       \
  static T loom_poly6##S(T x, T d) { /* shifted V */                                      \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    const T odd_end = n % 2 == 0 ? (T)(n + n + 1) : (T)(-(n + n + 1));                    \
    if (x == 1) return 1;                                                                 \
    if (x == 0) return odd_end;                                                           \
    return loom_cheb_v##S(x + x - 1, n, 6, odd_end);                                      \
  }                                                                                       \
  static T loom_poly7##S(T x, T d) { /* shifted W */                                      \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    const T low_end = n % 2 == 0 ? 1 : -1;                                                \
    if (x == 1) return (T)(n + n + 1);                                                    \
    if (x == 0) return low_end;                                                           \
    return loom_cheb_w##S(x + x - 1, n, 4, low_end);                                      \
  }                                                                                       \
  static T loom_poly8##S(T x, T d) { /* Hermite H (physicists') */                        \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (n == 0) return 1;                                                                 \
    if (n == 1) return x + x;                                                             \
    T p = 1, q = x + x, r = q;                                                            \
    for (int64_t k = 2; k < n + n; k += 2) {                                              \
      r = (x + x) * q - k * p;                                                            \
      p = q;                                                                              \
      q = r;                                                                              \
    }                                                                                     \
    return r;                                                                             \
  }                                                                                       \
  static T loom_poly9##S(T x, T d) { /* Hermite He (probabilists') */                     \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (n == 0) return 1;                                                                 \
    if (n == 1) return x;                                                                 \
    T p = 1, q = x, r = q;                                                                \
    for (int64_t k = 1; k < n; k++) {                                                     \
      r = x * q - k * p;                                                                  \
      p = q;                                                                              \
      q = r;                                                                              \
    }                                                                                     \
    return r;                                                                             \
  }                                                                                       \
  static T loom_poly10##S(T x, T d) { /* Laguerre L */                                    \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (fabs##S(x) == 0 || n == 0) return 1;                                              \
    if (n == 1) return 1 - x;                                                             \
    T p = 1, q = 1 - x, r = q;                                                            \
    for (int64_t k = 1; k < n; k++) {                                                     \
      r = (((k + k) + (1 - x)) * q - k * p) / (k + 1);                                    \
      p = q;                                                                              \
      q = r;                                                                              \
    }                                                                                     \
    return r;                                                                             \
  }                                                                                       \
  static T loom_poly11##S(T x, T d) { /* Legendre P */                                    \
    const int64_t n = (int64_t)d;                                                         \
    if (n < 0) return 0;                                                                  \
    if (fabs##S(x) == 1) return x > 0 || n % 2 == 0 ? 1 : -1;                             \
    if (n == 0) return 1;                                                                 \
    if (n == 1) return x;                                                                 \
    T p = 1, q = x, r = q;                                                                \
    for (int64_t k = 1; k < n; k++) {                                                     \
      r = ((k + k + 1) * x * q - k * p) / (k + 1);                                        \
      p = q;                                                                              \
      q = r;                                                                              \
    }                                                                                     \
    return r;                                                                             \
  }
LOOM_CHEBYSHEV(float, f)
LOOM_CHEBYSHEV(double, )
)";
}

std::string c_polynomial(int kind, DType t, const std::string& x, const std::string& n) {
  const std::string s = t == DType::Float32 ? "f" : "";
  return "loom_poly" + std::to_string(kind) + s + "(" + x + ", " + n + ")";
}

}  // namespace loom
