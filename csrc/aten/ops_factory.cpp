// Factories (arange, range, linspace, logspace, kaiser_window, eye, tril/triu_indices,
// scalar_tensor). zeros/ones/full/*_like and rand/randn/randint are composite in PyTorch and
// route to empty + fill_ or to these (random fills: ops_random.cpp).
#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

Shape shape_of_t(const Tensor& t) { return shape_of(t.sizes()); }
DType dtype_of(const Tensor& t) { return to_loom(t.scalar_type()); }
NodeRef cf(double v, DType t, const Shape& s) { return constant(Scalar::of_float(v), t, s); }
NodeRef ci(int64_t v, DType t, const Shape& s) { return constant(Scalar::of_int(v), t, s); }

// Resizes `out` to the meta result of an out= sequence as the CPU kernels do: only when the
// numbers of elements differ (NOTE [Sequences into any shape]).
void resize_like(Tensor& out, const Tensor& meta) {
  if (out.numel() != meta.numel()) out.resize_(meta.sizes());
}

// NOTE [Sequences into any shape]: arange, range, linspace and logspace keep an out= tensor
// that has as many elements as the sequence, whatever its shape and strides, and fill it
// in its logical (row-major) order: the CPU computes into a contiguous copy and copies that
// back, which an out= with elements in common (an expanded tensor) refuses. Element i of
// the sequence lies at row-major position i, the flat index that flat_index computes (in
// `t`) from the coordinates.
NodeRef flat_index(DType t, const Shape& s) {
  if (s.size() <= 1) return iota(t, s, 0);
  NodeRef idx;
  int64_t stride = 1;
  for (size_t d = s.size(); d-- > 0;) {
    if (s[d] != 1) {
      NodeRef term = binary(Op::Mul, iota(DType::Int64, s, int(d)), ci(stride, DType::Int64, s));
      idx = idx ? binary(Op::Add, idx, term) : term;
    }
    stride *= s[d];
  }
  return cast(idx ? idx : ci(0, DType::Int64, s), t);
}

void check_sequence_out(const Tensor& out) {
  if (!out.is_contiguous()) at::assert_no_internal_overlap(out);
}

// --- arange: start + step * i, in PyTorch's accumulate type (int64, double, or float) ---

Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                   Tensor& out) {
  check_not_complex("arange_cpu", out.scalar_type());
  Tensor meta = to_meta(out);
  at::meta::arange_outf(start, end, step, meta);
  resize_like(out, meta);
  check_sequence_out(out);
  EngineLock g(engine_mutex());
  DType t = dtype_of(out);
  DType acc = is_integral(t) ? DType::Int64 : t == DType::Float64 ? DType::Float64 : DType::Float32;
  if (t == DType::Float32) acc = DType::Float64;  // CPU accumulates float in double
  Shape s = shape_of_t(out);
  auto sc = [&](const c10::Scalar& v) {
    return acc == DType::Int64 ? ci(v.toLong(), acc, s) : cf(v.toDouble(), acc, s);
  };
  NodeRef v = binary(Op::Add, sc(start), binary(Op::Mul, sc(step), flat_index(acc, s)));
  assign(out, v);
  return out;
}

// --- range: start + step * i for i up to (end - start) / step inclusive, in the CPU's
// accumulate type (int64, double for float, float for bfloat16) ---

Tensor& range_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                  Tensor& out) {
  const c10::ScalarType st = out.scalar_type();
  TORCH_CHECK(st != at::kBool && st != at::kHalf && !at::isComplexType(st),
              "\"range_cpu\" not implemented for '", c10::toString(st), "'");
  const bool integral = at::isIntegralType(st, false);
  const DType acc = integral ? DType::Int64 : st == at::kBFloat16 ? DType::Float32 : DType::Float64;
  int64_t size;
  if (integral) {
    const int64_t a = start.toLong(), b = end.toLong(), d = step.toLong();
    TORCH_CHECK(d != 0, "step must be nonzero");
    TORCH_CHECK((d > 0 && b >= a) || (d < 0 && b <= a),
                "upper bound and lower bound inconsistent with step sign");
    size = (b - a) / d + 1;
  } else {
    auto check = [&](auto a, auto b, auto d) {
      TORCH_CHECK(d > 0 || d < 0, "step must be nonzero");
      TORCH_CHECK(std::isfinite(double(a)) && std::isfinite(double(b)), "unsupported range: ", a,
                  " -> ", b);
      TORCH_CHECK((d > 0 && b >= a) || (d < 0 && b <= a),
                  "upper bound and lower bound inconsistent with step sign");
      return static_cast<int64_t>((b - a) / d + 1);
    };
    size = acc == DType::Float32 ? check(start.to<float>(), end.to<float>(), step.to<float>())
                                 : check(start.toDouble(), end.toDouble(), step.toDouble());
  }
  if (out.numel() != size) out.resize_({size});
  check_sequence_out(out);
  EngineLock g(engine_mutex());
  const Shape s = shape_of_t(out);
  auto sc = [&](const c10::Scalar& v) {
    return acc == DType::Int64 ? ci(v.toLong(), acc, s) : cf(v.toDouble(), acc, s);
  };
  assign(out, binary(Op::Add, sc(start), binary(Op::Mul, flat_index(acc, s), sc(step))));
  return out;
}

// --- linspace: CPU's two-sided formula, each operation rounded in the result type ---

// Rounds a float32-computed value to `t` when `t` is a reduced float (c10::Half arithmetic
// rounds after every operation).
NodeRef rounded(const NodeRef& v, DType t) {
  if (!is_reduced_float(t)) return v;
  return cast(cast(v, t), DType::Float32);
}

// Bytes in one at::vec::Vectorized of the CPU kernels torch dispatches to.
int64_t vector_bytes() {
  static const int64_t bytes =
      at::show_config().find("CPU capability usage: AVX512") != std::string::npos ? 64 : 32;
  return bytes;
}

// Whether the running torch's CPU linspace computes in vector blocks (1.13) or each element
// by the two-sided formula (later releases dropped the vector loop). In blocks, int64's
// lanes step by the step truncated to an integer: linspace(-2, 9, 36) holds 0 at index 10
// where the formula gives 1.
bool cpu_linspace_vectorized() {
  static const bool blocks = at::linspace(-2, 9, 36, at::kLong)[10].item<int64_t>() == 0;
  return blocks;
}

// Values agree with CPU's to within an ulp of max(|start|, |end|) where the CPU's build
// contracted differently; its compiler formed an fma of each base's product and sum (`start +
// step * i`, and the lanes' `base + j * step`), which Loom computes as such (MulAdd) for
// float and double; half types round after every operation.
// CPU's loop: within full vector blocks of `vec` elements, element c + j of the vector at c
// is base(c) + j * step, with base(c) the two-sided formula at c, rounded to the result
// type; the tail uses the formula per element. Emulated for the single-task case, and only
// where the CPU has the blocks (vec = 0: it has not). `a`, `b`
// and `st` are start, end and step as the CPU computes them in `c`; the result has dtype `t`.
template <class T>
void parts_of(const T& v, double* out) { out[0] = static_cast<double>(v); }
template <class T>
void parts_of(const c10::complex<T>& v, double* out) { out[0] = v.real(), out[1] = v.imag(); }

NodeRef linspace_value(double a, double b, double st, DType t, DType c, int64_t steps,
                       int64_t vec, const Shape& s) {
  NodeRef stepc = cf(st, c, s);
  auto mul = [&](const NodeRef& x, const NodeRef& y) { return rounded(binary(Op::Mul, x, y), t); };
  const bool fused = is_floating(c) && !is_complex(c) && !is_reduced_float(t);
  // z + x * y, rounded once where the CPU's compiler fused it.
  auto mul_add_to = [&](const NodeRef& z, const NodeRef& x, const NodeRef& y) {
    return fused ? mul_add(x, y, z) : rounded(binary(Op::Add, z, mul(x, y)), t);
  };
  auto formula = [&](const NodeRef& idx) {
    NodeRef lo = mul_add_to(cf(a, c, s), stepc, rounded(idx, t));
    NodeRef back = rounded(binary(Op::Sub, cf(double(steps - 1), c, s), idx), t);
    NodeRef hi = fused ? mul_add(unary(Op::Neg, stepc), back, cf(b, c, s))
                       : rounded(binary(Op::Sub, cf(b, c, s), mul(stepc, back)), t);
    NodeRef first = binary(Op::Lt, idx, cf(double(steps / 2), c, s));
    NodeRef r = where(first, lo, hi);
    return is_integral(t) ? unary(Op::Trunc, r) : r;  // stored as scalar_t
  };
  NodeRef i = flat_index(c, s);
  NodeRef v = formula(i);
  if (vec > 0 && steps <= at::internal::GRAIN_SIZE && steps >= 2 * vec) {
    NodeRef j = binary(Op::Fmod, i, cf(double(vec), c, s));
    NodeRef base = formula(binary(Op::Sub, i, j));
    NodeRef in_vec = binary(Op::Lt, i, cf(double(steps / (2 * vec) * 2 * vec), c, s));
    v = where(in_vec, mul_add_to(base, rounded(j, t), stepc), v);
  }
  if (is_integral(t)) v = unary(Op::Trunc, v);
  return v;
}

Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, Tensor& out) {
  Tensor meta = to_meta(out);
  at::meta::linspace_outf(start, end, steps, meta);
  TORCH_CHECK(out.scalar_type() != at::kBool, "\"linspace_cpu\" not implemented for 'Bool'");
  resize_like(out, meta);
  if (steps == 0) return out;
  check_sequence_out(out);
  EngineLock g(engine_mutex());
  DType t = dtype_of(out);
  Shape s = shape_of_t(out);
  if (steps == 1) {
    assign(out, is_integral(t)   ? ci(start.toLong(), DType::Int64, s)
                : is_complex(t) ? scalar_node(start, s, DType::Complex128)
                                : cf(start.toDouble(), DType::Float64, s));
    return out;
  }
  // Host values of start, end and step exactly as the CPU kernel computes them; a complex
  // linspace is one per part (its step scales and adds the parts independently).
  double a[2] = {0, 0}, b[2] = {0, 0}, st[2] = {0, 0};
  DType c = DType::Float64;
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "linspace_cpu", [&] {
    using step_t = std::conditional_t<std::is_integral<scalar_t>::value, double, scalar_t>;
    const scalar_t s0 = start.to<scalar_t>(), s1 = end.to<scalar_t>();
    const step_t step = (static_cast<step_t>(s1) - static_cast<step_t>(s0)) / (steps - 1);
    parts_of(s0, a), parts_of(s1, b), parts_of(step, st);
    if (std::is_same<scalar_t, float>::value || std::is_same<scalar_t, at::Half>::value ||
        std::is_same<scalar_t, at::BFloat16>::value || std::is_same<scalar_t, c10::complex<float>>::value)
      c = DType::Float32;
  });
  const int64_t vec = cpu_linspace_vectorized() ? vector_bytes() / int64_t(out.element_size()) : 0;
  DType part = real_part_dtype(t);
  NodeRef v = linspace_value(a[0], b[0], st[0], part, c, steps, vec, s);
  if (is_complex(t))
    v = binary(Op::Complex, v, linspace_value(a[1], b[1], st[1], part, c, steps, vec, s));
  assign(out, v);
  return out;
}

// --- logspace: base ^ (start + step i) in double, from the end for the second half ---

Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base,
                     Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  const c10::ScalarType st = out.scalar_type();
  TORCH_CHECK(st != at::kHalf && st != at::kBool, "\"logspace_cpu\" not implemented for '",
              c10::toString(st), "'");
  check_sequence_out(out);
  if (steps == 0) return out;
  EngineLock g(engine_mutex());
  DType t = dtype_of(out);
  Shape s = shape_of_t(out);
  // Real results: start and end as the dtype holds them, their difference in the dtype, the
  // rest in double. Complex results compute in their own dtype, as the CPU does.
  const DType c = is_complex(t) ? t : DType::Float64;
  NodeRef b = cast(cf(base, DType::Float64, s), c);
  if (steps == 1) {
    assign(out, binary(Op::Pow, b, scalar_node(start, s, c)));
    return out;
  }
  NodeRef s0 = scalar_node(start, s, t), s1 = scalar_node(end, s, t);
  NodeRef n1 = cast(cf(double(steps - 1), DType::Float64, s), c);
  NodeRef step = binary(Op::Div, cast(binary(Op::Sub, s1, s0), c), n1);
  s0 = cast(s0, c), s1 = cast(s1, c);
  NodeRef i = cast(flat_index(DType::Int64, s), c);
  NodeRef lo = binary(Op::Add, s0, binary(Op::Mul, step, i));
  NodeRef hi = binary(Op::Sub, s1, binary(Op::Mul, step, binary(Op::Sub, n1, i)));
  NodeRef first = binary(Op::Lt, flat_index(DType::Int64, s), ci(steps / 2, DType::Int64, s));
  assign(out, binary(Op::Pow, b, where(first, lo, hi)));
  return out;
}

// --- kaiser_window: I0(beta sqrt(1 - ((i - alpha) / alpha)^2)) / I0(beta), as the CPU's
// kernel computes it: torch 1.13 in the result type (alpha and beta rounded to it; each
// operation of a bfloat16 window rounded, its I0 computed in float), 2.x in float for a
// reduced float (float16 too), rounded once ---

// Whether the running CPU rounds a reduced-float window once: a window of 1.13's rounds
// each step, and its element 1 of (5, periodic, beta 12) in bfloat16 is 0.1044921875.
bool kaiser_rounds_once() {
  static const bool once = [] {
    Tensor w = at::kaiser_window(5, true, 12.0, at::TensorOptions().dtype(at::kBFloat16));
    return w[1].item<float>() != 0.1044921875f;
  }();
  return once;
}

Tensor kaiser_window_beta(int64_t length, bool periodic, double beta,
                          c10::optional<at::ScalarType> dtype_opt, c10::optional<at::Layout> layout,
                          c10::optional<at::Device> device, c10::optional<bool> pin_memory) {
  const at::ScalarType st = c10::dtype_or_default(dtype_opt);
  const auto options =
      at::TensorOptions().dtype(st).layout(layout).device(device).pinned_memory(pin_memory);
  TORCH_CHECK(options.layout() != at::kSparse,
              "kaiser_window is not implemented for sparse types, got: ", options);
  TORCH_CHECK(at::isFloatingType(st) || at::isComplexType(st),
              "kaiser_window expects floating point dtypes, got: ", options);
  TORCH_CHECK(length >= 0, "kaiser_window requires non-negative window_length, got window_length=",
              length);
  if (length == 0) return empty_loom({0}, st);
  if (length == 1) return at::ones({1}, options);  // before the kernel's dtype check
  // which dtypes the CPU's kernel takes is the running torch's (2.x's takes float16)
  LOOM_CPU_VERDICT(st, c10::ScalarType::Undefined,
                   at::kaiser_window(2, true, 12.0, at::TensorOptions().dtype(st)));
  if (periodic) ++length;
  Tensor window = empty_loom({length}, st);
  const bool once = is_reduced_float(to_loom(st)) && kaiser_rounds_once();
  {
    EngineLock g(engine_mutex());
    const DType t = to_loom(st), c = t == DType::Float64 ? DType::Float64 : DType::Float32;
    const DType step = once ? c : t;  // what each step rounds to
    const Shape s{length};
    auto in_t = [&](double v) { return rounded(cf(v, c, s), step); };  // static_cast<opmath_t>
    auto op = [&](Op o, const NodeRef& x, const NodeRef& y) {
      return rounded(binary(o, x, y), step);
    };
    const NodeRef alpha = in_t((double(length) - 1) / 2.0), b = in_t(beta);
    const NodeRef x = op(Op::Div, op(Op::Sub, iota(c, s, 0), alpha), alpha);
    const NodeRef root =
        rounded(unary(Op::Sqrt, op(Op::Sub, cf(1, c, s), op(Op::Mul, x, x))), step);
    const NodeRef top = rounded(unary(Op::I0, op(Op::Mul, b, root)), step);
    assign(window, op(Op::Div, top, rounded(unary(Op::I0, b), step)));
  }
  return periodic ? window.narrow(0, 0, length - 1) : window;
}
Tensor kaiser_window_periodic(int64_t length, bool periodic, c10::optional<at::ScalarType> dtype,
                              c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                              c10::optional<bool> pin_memory) {
  return kaiser_window_beta(length, periodic, 12.0, dtype, layout, device, pin_memory);
}
Tensor kaiser_window_fn(int64_t length, c10::optional<at::ScalarType> dtype,
                        c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                        c10::optional<bool> pin_memory) {
  return kaiser_window_beta(length, true, 12.0, dtype, layout, device, pin_memory);
}

// --- tril_indices / triu_indices: the (small) table of coordinates is built on the host,
// as the CPU builds it, and copied in ---

Tensor triangle_indices(bool lower, int64_t row, int64_t col, int64_t offset,
                        c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                        c10::optional<at::Device> device, c10::optional<bool> pin_memory) {
  auto host = lower ? at::tril_indices(row, col, offset, dtype, layout, at::kCPU, pin_memory)
                    : at::triu_indices(row, col, offset, dtype, layout, at::kCPU, pin_memory);
  Tensor out = empty_loom(host.sizes(), host.scalar_type());
  out.copy_(host);
  return out;
}
Tensor tril_indices_fn(int64_t row, int64_t col, int64_t offset, c10::optional<at::ScalarType> dtype,
                       c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                       c10::optional<bool> pin_memory) {
  return triangle_indices(true, row, col, offset, dtype, layout, device, pin_memory);
}
Tensor triu_indices_fn(int64_t row, int64_t col, int64_t offset, c10::optional<at::ScalarType> dtype,
                       c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                       c10::optional<bool> pin_memory) {
  return triangle_indices(false, row, col, offset, dtype, layout, device, pin_memory);
}

// --- eye ---

Tensor& eye_m_out(int64_t n, int64_t m, Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  EngineLock g(engine_mutex());
  Shape s = shape_of_t(out);
  NodeRef diag = binary(Op::Eq, iota(DType::Int64, s, 0), iota(DType::Int64, s, 1));
  assign(out, diag);
  return out;
}
Tensor& eye_out(int64_t n, Tensor& out) { return eye_m_out(n, n, out); }

// The composite is empty({}) then fill_: two more dispatches on every Python scalar that
// meets a Loom tensor through indexing (`x[i] = v` makes one per write).
Tensor scalar_tensor_fn(const c10::Scalar& s, c10::optional<at::ScalarType> dtype,
                        c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                        c10::optional<bool> pin_memory) {
  const auto options =
      at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory);
  TORCH_CHECK(options.layout() == at::kStrided, "scalar_tensor: only strided tensors, got ",
              options.layout());
  const at::ScalarType t = c10::typeMetaToScalarType(options.dtype());
  check_scalar_fits(s, t);
  Tensor out = empty_loom({}, t, at::MemoryFormat::Contiguous);
  EngineLock g(engine_mutex());
  assign(out, scalar_node(s, {}, to_loom(t)));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", arange_out);
  m.impl("linspace.out", linspace_out);
  m.impl("range.out", range_out);
  m.impl("logspace.out", logspace_out);
  m.impl("kaiser_window", kaiser_window_fn);
  m.impl("kaiser_window.periodic", kaiser_window_periodic);
  m.impl("kaiser_window.beta", kaiser_window_beta);
  m.impl("tril_indices", tril_indices_fn);
  m.impl("triu_indices", triu_indices_fn);
  m.impl("eye.out", eye_out);
  m.impl("eye.m_out", eye_m_out);
  m.impl("scalar_tensor", scalar_tensor_fn);
}

}  // namespace loom::aten
