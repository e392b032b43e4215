#include "core/dtype.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace loom {

int itemsize(DType t) {
  switch (t) {
#define X(name, st, ct, size) \
  case DType::name:           \
    return size;
    LOOM_DTYPES(X)
#undef X
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
#define X(name, st, ct, size) \
  case DType::name:           \
    return #name;
    LOOM_DTYPES(X)
#undef X
  }
  return "?";
}

const char* storage_ctype(DType t) {
  switch (t) {
#define X(name, st, ct, size) \
  case DType::name:           \
    return #st;
    LOOM_DTYPES(X)
#undef X
  }
  return "?";
}

const char* compute_ctype(DType t) {
  switch (t) {
#define X(name, st, ct, size) \
  case DType::name:           \
    return #ct;
    LOOM_DTYPES(X)
#undef X
  }
  return "?";
}

DType real_part_dtype(DType t) {
  if (t == DType::Complex32) return DType::Float16;
  if (t == DType::Complex64) return DType::Float32;
  if (t == DType::Complex128) return DType::Float64;
  return t;
}

DType complex_of(DType t) {
  if (t == DType::Float16) return DType::Complex32;
  return t == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

bool Scalar::operator==(const Scalar& o) const {
  if (is_int != o.is_int) return false;
  if (is_int) return i == o.i;
  // Bitwise, so that NaN equals NaN and -0.0 differs from 0.0 when hash-consing.
  return std::memcmp(&f, &o.f, sizeof f) == 0 && std::memcmp(&im, &o.im, sizeof im) == 0;
}

static std::string float_literal(double v, bool single) {
  if (std::isnan(v)) return single ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) {
    const char* inf = single ? "__builtin_inff()" : "__builtin_inf()";
    return v < 0 ? std::string("(-") + inf + ")" : std::string(inf);
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, single ? "%af" : "%a", single ? double(float(v)) : v);
  return buf;
}

std::string c_literal(const Scalar& s, DType t) {
  char buf[64];
  if (is_complex(t)) {
    bool single = t != DType::Complex128;
    return "__builtin_complex(" + float_literal(s.to_double(), single) + ", " +
           float_literal(s.is_int ? 0.0 : s.im, single) + ")";
  }
  if (is_floating(t)) {
    double v = s.to_double();
    bool single = t != DType::Float64;
    return "(" + std::string(compute_ctype(t)) + ")" + float_literal(v, single);
  }
  if (t == DType::Bool) return s.is_int ? (s.i != 0 ? "1" : "0") : (s.f != 0 ? "1" : "0");
  int64_t v = s.is_int ? s.i : int64_t(s.f);
  if (v == INT64_MIN) return "((int64_t)(-9223372036854775807LL - 1))";
  std::snprintf(buf, sizeof buf, "((%s)%" PRId64 "LL)", compute_ctype(t), v);
  return buf;
}

}  // namespace loom
