// Bessel functions J0, J1, Y0, Y1, K0, K1 (and e^x K0, e^x K1) and the Airy function Ai, in
// double, by classical series, asymptotic expansions and quadrature (not the CPU's rational
// approximations): agreement with the CPU is to its accuracy, about 1e-15 relative in float64
// (absolute near zeros), and its special values (NaN at infinities where the CPU gives NaN).
#include "codegen/ops_c.h"

namespace loom {

const char* c_bessel_prelude() {
  return R"(
#define LOOM_PI 3.14159265358979323846
#define LOOM_EULER 0.57721566490153286061
/* J_n(x) and Y_n(x), n = 0 or 1, 0 < x <= 15, by their power series in h = x / 2
   (Abramowitz and Stegun 9.1.10, 9.1.11):
     J_n = sum_k (-h^2)^k h^n / (k! (k + n)!)
     Y_0 = (2 / pi) ((ln h + gamma) J_0 - sum_k H_k term_k)
     Y_1 = (2 / pi) (ln h + gamma) J_1 - 2 / (pi x) - (1 / pi) sum_k (H_k + H_(k+1)) term_k
   with H_k the harmonic numbers. The largest term is below 1e5, so the sums keep about 1e-11
   absolutely. */
static void loom_jy_series(int n, double x, double* j, double* y) {
  const double h = 0.5 * x, t = h * h;
  double term = n ? h : 1, sj = term, sh = n ? term : 0, hk = 0;
  for (int k = 1; k < 80; ++k) {
    term *= -t / (k * (double)(k + n));
    const double hk1 = hk + 1.0 / k;
    sj += term;
    sh += (n ? hk1 + (hk1 + 1.0 / (k + 1)) : hk1) * term;
    hk = hk1;
    if (k > h && fabs(term) < 1e-18) break;
  }
  *j = sj;
  const double lg = log(h) + LOOM_EULER;
  *y = n ? (2 / LOOM_PI) * lg * sj - 2 / (LOOM_PI * x) - sh / LOOM_PI
         : (2 / LOOM_PI) * (lg * sj - sh);
}
/* Hankel's expansion for x > 15 (A&S 9.2.5-9.2.10): with u_k = prod_(j<=k) (4n^2 - (2j-1)^2)
   / (8 j x), P = u_0 - u_2 + u_4 ..., Q = u_1 - u_3 ..., chi = x - (2n + 1) pi / 4,
   J_n = sqrt(2 / (pi x)) (P cos chi - Q sin chi), Y_n = sqrt(2 / (pi x)) (P sin chi + Q cos chi).
   Its terms shrink until k ~ 2x; the smallest is below 1e-11. */
static void loom_jy_asymptotic(int n, double x, double* j, double* y) {
  const double mu = 4.0 * n * n;
  double u = 1, p = 1, q = 0;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2.0 * k - 1;
    const double next = u * (mu - odd * odd) / (8.0 * k * x);
    if (fabs(next) >= fabs(u) || next == 0) break;
    u = next;
    const double s = (k & 2) ? -u : u; /* signs + + - - + + ... for k = 0, 1, 2, 3 ... */
    if (k & 1) q += s; else p += s;
  }
  const double chi = x - (2 * n + 1) * (LOOM_PI / 4), a = sqrt(2 / (LOOM_PI * x));
  const double c = cos(chi), s = sin(chi);
  *j = a * (p * c - q * s);
  *y = a * (p * s + q * c);
}
static void loom_jy(int n, double x, double* j, double* y) {
  if (x <= 15) loom_jy_series(n, x, j, y); else loom_jy_asymptotic(n, x, j, y);
}
static double loom_bessel_j0(double x) {
  if (x != x || isinf(x)) return __builtin_nan("");
  x = fabs(x);
  if (x == 0) return 1;
  double j, y;
  loom_jy(0, x, &j, &y);
  return j;
}
static double loom_bessel_j1(double x) {
  if (x != x || isinf(x)) return __builtin_nan("");
  if (x == 0) return x;
  double j, y;
  loom_jy(1, fabs(x), &j, &y);
  return x < 0 ? -j : j;
}
static double loom_bessel_y(int n, double x) {
  if (x == 0) return -__builtin_inf();
  if (x != x || x < 0 || isinf(x)) return __builtin_nan("");
  double j, y;
  loom_jy(n, x, &j, &y);
  return y;
}
/* e^x K_nu(x) for x > 0 by the trapezoidal rule on
     e^x K_nu(x) = integral_0^inf exp(-2 x sinh(t / 2)^2) cosh(nu t) dt,
   whose integrand is smooth and decays like a Gaussian of width 1 / sqrt(x) (a double
   exponential far out): steps of a quarter of that width (at most 1/4) converge to rounding. */
static double loom_bessel_ke(double nu, double x) {
  const double step = x > 2 ? 0.25 * sqrt(2 / x) : 0.25;
  double sum = 0.5;
  for (int k = 1; k < 4000; ++k) {
    const double t = k * step, s = sinh(0.5 * t);
    const double f = exp(-2 * x * s * s) * cosh(nu * t);
    sum += f;
    if (f < 1e-18 * sum) break;
  }
  return step * sum;
}
/* K_0 and K_1 for 0 < x <= 2 by their series in h = x / 2 (A&S 9.6.13, 9.6.11):
     K_0 = -(ln h + gamma) I_0 + sum_k H_k h^2k / (k!)^2
     K_1 = 1 / x + (ln h + gamma) I_1 - 1/2 sum_k (H_k + H_(k+1)) h^(2k+1) / (k! (k+1)!)
   (all terms of one sign: no cancellation). */
static double loom_bessel_k_series(int n, double x) {
  const double h = 0.5 * x, t = h * h;
  double term = n ? h : 1, si = term, sh = n ? term : 0, hk = 0;
  for (int k = 1; k < 60; ++k) {
    term *= t / (k * (double)(k + n));
    const double hk1 = hk + 1.0 / k;
    si += term;
    sh += (n ? hk1 + (hk1 + 1.0 / (k + 1)) : hk1) * term;
    hk = hk1;
    if (term < 1e-18 * si) break;
  }
  const double lg = log(h) + LOOM_EULER;
  return n ? 1 / x + lg * si - 0.5 * sh : -lg * si + sh;
}
/* K_n(x), or e^x K_n(x) when `scaled`. */
static double loom_bessel_k(int n, double x, int scaled) {
  if (x != x || x < 0) return __builtin_nan("");
  if (x == 0) return __builtin_inf();
  if (isinf(x)) return 0;
  if (x <= 2) {
    const double k = loom_bessel_k_series(n, x);
    return scaled ? k * exp(x) : k;
  }
  const double ke = loom_bessel_ke(n, x);
  return scaled ? ke : ke * exp(-x);
}
/* Ai(x): for x >= 1, (1 / pi) sqrt(x / 3) K_(1/3)(zeta) with zeta = 2/3 x^(3/2) (A&S 10.4.14);
   for -7 <= x < 1 its Maclaurin series Ai(0) f - |Ai'(0)| g (A&S 10.4.2), f_k = f_(k-1) x^3 /
   ((3k-1) 3k), g_k = g_(k-1) x^3 / (3k (3k+1)), which keeps 1e-12 absolutely; below -7 the
   oscillating expansion (A&S 10.4.60) Ai(-z) = z^(-1/4) / sqrt(pi) (sin(zeta + pi/4) P -
   cos(zeta + pi/4) Q), P = c_0 - c_2 / zeta^2 ..., Q = c_1 / zeta - c_3 / zeta^3 ..., c_k =
   c_(k-1) (6k-5)(6k-3)(6k-1) / (216 (2k-1) k). */
static double loom_airy_ai(double x) {
  if (x != x || isinf(x)) return __builtin_nan("");
  if (x >= 1) {
    const double zeta = (2.0 / 3) * x * sqrt(x);
    if (zeta > 745) return 0;
    return sqrt(x / 3) / LOOM_PI * loom_bessel_ke(1.0 / 3, zeta) * exp(-zeta);
  }
  if (x >= -7) {
    const double x3 = x * x * x;
    double f = 1, g = x, sf = 1, sg = x;
    for (int k = 1; k < 60; ++k) {
      f *= x3 / ((3.0 * k - 1) * (3.0 * k));
      g *= x3 / ((3.0 * k) * (3.0 * k + 1));
      sf += f;
      sg += g;
      if (fabs(f) + fabs(g) < 1e-18) break;
    }
    return 0.355028053887817239260 * sf - 0.258819403792806798405 * sg;
  }
  const double z = -x, zeta = (2.0 / 3) * z * sqrt(z);
  double c = 1, p = 1, q = 0, w = 1;
  for (int k = 1; k < 60; ++k) {
    const double next =
        c * (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / (216.0 * (2 * k - 1) * k);
    const double wn = w / zeta;
    if (next * wn >= c * w) break;
    c = next;
    w = wn;
    const double s = (k & 2) ? -c * w : c * w;
    if (k & 1) q += s; else p += s;
  }
  const double a = zeta + LOOM_PI / 4;
  return (sin(a) * p - cos(a) * q) / (sqrt(LOOM_PI) * sqrt(sqrt(z)));
}
)";
}

std::string c_bessel(int kind, DType t, const std::string& x) {
  static const char* const fns[] = {"loom_bessel_j0(",   "loom_bessel_j1(",   "loom_bessel_y(0, ",
                                    "loom_bessel_y(1, ", "loom_bessel_k(0, ", "loom_bessel_k(1, ",
                                    "loom_bessel_k(0, ", "loom_bessel_k(1, ", "loom_airy_ai("};
  std::string call = std::string(fns[kind]) + "(double)" + x;
  if (kind >= 4 && kind <= 7) call += kind >= 6 ? ", 1" : ", 0";
  return "((" + c_storage_type(t) + ")" + call + "))";
}

}  // namespace loom
