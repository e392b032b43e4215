// Element types the engine computes with, and scalars of any of them.
#pragma once

#include <cstdint>
#include <string>

namespace loom {

// X(name, storage C type, compute C type, itemsize). Complex dtypes come last: the
// predicates below rely on the order.
#define LOOM_DTYPES(X)                         \
  X(Bool, uint8_t, uint8_t, 1)                 \
  X(UInt8, uint8_t, uint8_t, 1)                \
  X(Int8, int8_t, int8_t, 1)                   \
  X(Int16, int16_t, int16_t, 2)                \
  X(Int32, int32_t, int32_t, 4)                \
  X(Int64, int64_t, int64_t, 8)                \
  X(Float16, uint16_t, float, 2)               \
  X(BFloat16, uint16_t, float, 2)              \
  X(Float32, float, float, 4)                  \
  X(Float64, double, double, 8)                \
  X(Complex32, _Complex _Float16, float _Complex, 4) \
  X(Complex64, float _Complex, float _Complex, 8) \
  X(Complex128, double _Complex, double _Complex, 16)

enum class DType : uint8_t {
#define X(name, st, ct, size) name,
  LOOM_DTYPES(X)
#undef X
};

int itemsize(DType t);
const char* dtype_name(DType t);
const char* storage_ctype(DType t);  // how an element is kept in memory
const char* compute_ctype(DType t);  // what generated code computes it in
inline bool is_floating(DType t) { return t >= DType::Float16 && t <= DType::Float64; }
inline bool is_complex(DType t) { return t >= DType::Complex32; }
inline bool is_integral(DType t) { return t <= DType::Int64; }  // bool included
inline bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
inline bool is_signed(DType t) { return t >= DType::Int8; }

// The real dtype of a complex dtype's parts; other dtypes map to themselves.
DType real_part_dtype(DType t);
// The complex dtype whose parts are `t` (BFloat16 has none: Complex64).
DType complex_of(DType t);

// A host scalar: an exact int64, or a double with an imaginary part `im` (0 for reals).
struct Scalar {
  bool is_int = false;
  int64_t i = 0;
  double f = 0;
  double im = 0;
  static Scalar of_int(int64_t v) { return Scalar{true, v, double(v)}; }
  static Scalar of_float(double v) { return Scalar{false, int64_t(v), v}; }
  static Scalar of_complex(double re, double im) { return Scalar{false, int64_t(re), re, im}; }
  double to_double() const { return is_int ? double(i) : f; }  // the real part
  bool operator==(const Scalar& o) const;
};

// C literal for `s` converted to `t`'s compute type, exactly (hex floats, INT64_MIN safe).
std::string c_literal(const Scalar& s, DType t);

}  // namespace loom
