// The regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac),
// in double: P's power series below x = a + 1, Q's continued fraction above, the other as
// the complement; the CPU's boundary values.
#include "codegen/ops_c.h"

namespace loom {

const char* c_igamma_prelude() {
  return R"(double lgamma_r(double, int*);
/* log(e^-x x^a / Gamma(a + 1)). For a >= 10 the two logs are large and cancel, so it is
   -a (l - 1 - log l) - log(2 pi a) / 2 - s(a) with l = x / a (through log1p near l = 1),
   where s(a) = log Gamma(a + 1) - (a log a - a + log(2 pi a) / 2) is Stirling's series
   1/12a - 1/360a^3 + 1/1260a^5 - 1/1680a^7. */
static double loom_igamma_log_prefactor(double a, double x) {
  if (a < 10) {
    int s;
    return a * log(x) - x - lgamma_r(a + 1, &s);
  }
  const double t = (x - a) / a, r = 1 / a, r2 = r * r;
  const double d = fabs(t) < 0.5 ? t - log1p(t) : t - log(x / a);
  const double s = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 / 1680)));
  return -a * d - 0.5 * log(2 * 3.14159265358979323846 * a) - s;
}
/* P(a, x) (upper = 0) or Q(a, x) (upper = 1). Series: P = f sum_n x^n / ((a + 1) ... (a + n)),
   f = e^-x x^a / Gamma(a + 1). Continued fraction (modified Lentz): Q = f a / (x + 1 - a -
   1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)). Both take about 10 sqrt(a) steps when x is near
   a; they stop at 200000, so past a ~ 4e8 such values lose accuracy. */
static double loom_igamma(double a, double x, int upper) {
  if (a != a || x != x) return a + x;
  if (x < 0 || a < 0) return __builtin_nan("");
  if (a == 0) return x > 0 ? (upper ? 0 : 1) : __builtin_nan("");
  if (x == 0) return upper ? 1 : 0;
  if (isinf(a)) return isinf(x) ? __builtin_nan("") : (upper ? 1 : 0);
  if (isinf(x)) return upper ? 0 : 1;
  const double f = exp(loom_igamma_log_prefactor(a, x));
  if (x < a + 1) {
    double term = 1, sum = 1;
    for (int n = 1; n < 200000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    const double p = f * sum;
    return upper ? 1 - p : p;
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 200000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (fabs(step - 1) < 1e-16) break;
  }
  const double q = f * a * h;
  return upper ? q : 1 - q;
}
)";
}

std::string c_igamma(int upper, DType t, const std::string& a, const std::string& x) {
  return "((" + c_storage_type(t) + ")loom_igamma((double)" + a + ", (double)" + x + ", " +
         std::to_string(upper) + "))";
}

}  // namespace loom
