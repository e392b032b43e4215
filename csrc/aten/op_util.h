// Shared machinery of the op families: each op first runs on meta tensors, which gives
// PyTorch's own result dtype, sizes, strides and error messages; then its value is built
// as a graph and stored into the result.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <array>
#include <atomic>
#include <cstring>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "aten/tensor_util.h"

namespace loom::aten {

// NOTE [C++ meta functions]: an op's meta call, on the to_meta stand-ins of its operands,
// runs its structured kernel's C++ meta function directly (at::meta::add, at::meta::mm,
// ...: the functions the dispatcher's Meta kernel wraps in 1.13) where it has one, not
// through the dispatcher: torch 2.x registers Python meta functions over them for the
// Meta key, which lay some results out otherwise (contiguous where TensorIterator permutes),
// word errors otherwise ("Attempting to broadcast a dimension ..." where the CPU says "The
// size of tensor a (3) must match ...", "a must be 2D" for mm) and cost tens of us a call.
// Ops without a structured kernel (abs, masked_fill, the logical ops, arange) still go
// through the dispatcher.

// A meta tensor with t's sizes, strides, dtype (and wrapped-number flag, which type
// promotion depends on). CPU scalars stay scalars; undefined stays undefined.
at::Tensor to_meta(const at::Tensor& t);
c10::optional<at::Tensor> to_meta(const c10::optional<at::Tensor>& t);
// The meta stand-in of an out= argument: an input's own stand-in when out is that input
// (the same TensorImpl), so that the meta run sees the aliasing and refuses to resize an
// input, as the CPU's TensorIterator does.
at::Tensor to_meta_out(const at::Tensor& out, const at::Tensor& a, const at::Tensor& meta_a,
                       const at::Tensor& b = at::Tensor(), const at::Tensor& meta_b = at::Tensor());

// The value of an operand, broadcast to `shape` and converted to `dtype`: a Loom tensor
// is a lazy load; a CPU 0-dim tensor (a wrapped Python scalar) becomes a constant.
NodeRef operand(const at::Tensor& t, const Shape& shape, DType dtype);
NodeRef scalar_node(const c10::Scalar& s, const Shape& shape, DType dtype);
// Whether a scalar (an alpha, a beta) is 1, of whatever kind.
inline bool is_one(const c10::Scalar& s) { return s.toComplexDouble() == 1.0; }

// PyTorch's promoted dtype of two operands (at::result_type), without the list it
// builds: that list's allocation and the reference counts of its copies were a third of
// the call, itself 4% of a tiny op's host time.
c10::ScalarType promoted(const at::Tensor& a, const at::Tensor& b);

// Allocates the functional result with the meta result's layout.
at::Tensor result_like(const at::Tensor& meta);
// Makes `out` match the meta result of an out= call (resizing as PyTorch does).
void match_out(at::Tensor& out, const at::Tensor& meta_out);
// Stores `value` (of dst's shape, any dtype) into dst, converting to dst's dtype.
void assign(const at::Tensor& dst, const NodeRef& value);

// Raises the CPU's error for a kernel it has no complex version of: `"kernel" not
// implemented for 'ComplexFloat'` when `t` is complex.
void check_not_complex(const char* kernel, c10::ScalarType t);

// Whether the running torch computes aten op `name` ("argsort.stable") by a
// CompositeImplicitAutograd kernel. A kernel of 1.13's CPU op that a later release made
// composite must not be registered there: it would hide the composite, whose autograd the
// op then has none of ("Could not run ... from the 'Autogradloom' backend").
bool composite_in_this_release(const char* name);

// Raises the CPU's error when `v` does not convert to `t` (a complex value into a real
// tensor, an integer out of range): "value cannot be converted to type ... without overflow".
void check_scalar_fits(const c10::Scalar& v, c10::ScalarType t);

// The CPU writes through an expanded self (index_put_, index_fill_, masked_fill_) with a
// deprecation warning where other in-place ops raise; true when it warned. `example` ends
// the message ("tensor[mask] = scalar").
bool warn_if_expanded(const at::Tensor& self, const char* op, const char* example);
// A mask that is not bool gets what the running torch's CPU op does with its dtype: `cpu_op`
// runs the op on one-element CPU tensors with a mask of that dtype (uint8: 1.13 warns that it
// is deprecated; 2.x refuses it, or warns and then refuses: its errors and warnings).
void mask_dtype_as_cpu(const at::Tensor& mask,
                       const std::function<void(const at::Tensor&)>& cpu_op);

// Rejects devices other than Loom and CPU scalars, as a real device does.
void check_operands(const char* op, std::initializer_list<at::Tensor> ts);

// Whether an optional tensor argument (weight, bias ...) was given.
inline bool has(const c10::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }
// The dtype statistics and sums accumulate in: float32 for float16/bfloat16.
inline DType acc_of(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }
// A float constant of dtype t broadcast to shape s.
inline NodeRef scalar(double v, DType t, const Shape& s) {
  return constant(Scalar::of_float(v), t, s);
}
// The smallest value of dtype t, a maximum's identity: -inf for floats, the least integer
// (exact in a double: at most 2^63 in magnitude) for integers, false for bool.
double lowest_value(c10::ScalarType t);

}  // namespace loom::aten

namespace loom::aten {

// --- indexing: element indices into a storage, computed in Int64 ---

NodeRef int_const(int64_t v, const Shape& shape);
// The flat input index (`flat`, in the window's shape) of the element of each pooling
// window (the dims `axes` of `window`) that the CPU's pooling kernels pick: the first
// largest element, or, in a window holding NaNs, the last NaN (each replaces the one
// before, where argmax keeps the first). Int64, given each element's validity (padding is
// never chosen) and the window's maximum `max` (reduced over `axes`, dims kept); `plane`
// bounds the flat indices, and `drop` takes a reduction over the window to the output's
// shape (NOTE [Max-pool indices by score] in op_util.cpp).
NodeRef pooling_index(const NodeRef& window, const NodeRef& valid, const NodeRef& flat,
                      const NodeRef& max, const std::vector<int>& axes, int64_t plane,
                      const std::function<NodeRef(const NodeRef&)>& drop);
// An index tensor as Int64 on Loom (a CPU index is uploaded), broadcast to `shape`.
NodeRef index_value(const at::Tensor& index, const Shape& shape);
// The storage element index of `self` at per-dim coordinates (Int64 nodes of one shape).
NodeRef storage_index(const at::Tensor& self, const std::vector<NodeRef>& coord);
// `index` checked against a dim of `size`; out-of-range values fault with `message`, in
// which "{}" stands for the offending index.
NodeRef checked(const NodeRef& index, int64_t size, bool wrap, bool index_error,
                const std::string& message);
std::string bounds_message(int64_t dim, int64_t size, const char* prefix = "");
// When the index values are already known on the host (a CPU index, or a small Loom index
// whose storage is realized or whose values follow from constants: NOTE [Known values] in
// core/known.h), checks them now, so that the op itself raises as on CPU;
// otherwise the kernel's check reports the fault at realization. Entries equal to `skip`
// (nll_loss's ignore_index) are not indices. Returns true when every value was seen and lies
// in [0, size): the op's lazy check (and wrap) is then redundant, and a kernel without it
// vectorizes and tiles as any other (the values read later are the ones checked: a
// reader keeps the value it recorded). Entries are checked row-major, as the CPU's loops
// over an index meet them, or in memory order (`memory_order`) where TensorIterator walks
// an index that lays out the result (advanced indexing): the first bad one is the one the
// CPU reports.
bool check_now(const at::Tensor& index, int64_t size, bool wrap, bool index_error,
               const std::string& message, std::optional<int64_t> skip = std::nullopt,
               bool memory_order = false);
// Indices (and masks) read on the host at the op have at most this many elements.
constexpr int64_t kMaxEagerCheck = int64_t(1) << 16;
// Indices checked at the op from values computed on the host (NOTE [Known values]) have
// at most this many: evaluating the graph costs 10-30 ns an element (64K elements of a
// repeated index took 0.9-1.6 ms before its 0.1 ms gather), where the kernel's own check
// costs next to nothing.
constexpr int64_t kMaxKnownCheck = int64_t(1) << 12;
// `index` (Int64 values, not wrapped) checked against `size`: at the op when its values are
// known (NOTE [Known values]), dropping the lazy check when all lie in range; by the
// kernel otherwise.
NodeRef checked_known(const NodeRef& index, int64_t size, bool index_error,
                      const std::string& message);
// `value` (the Int64 values of `index`, as the op reads them) checked against `size` as
// `checked` does, after check_now: unchanged when check_now saw every value in range.
NodeRef checked_now(const at::Tensor& index, const NodeRef& value, int64_t size, bool wrap,
                    bool index_error, const std::string& message,
                    std::optional<int64_t> skip = std::nullopt, bool memory_order = false);

// NOTE [Library calls issued when recorded]: a product or convolution runs in a library
// on memory: its operands leave the graph there. Realized as it is recorded, it is issued
// to the executor (NOTE [Asynchronous execution] in runtime/executor.h) while the host
// records the rest of the step; left pending until a bound or a sync, a training step's
// executor sat idle through its forward (a GPT step's first task came 4.4 ms in). Its
// operands' producers still fuse into the kernel storing them, and realizing in program
// order stored values for later readers: a GPT step ran 144 kernels instead of 155, a
// CNN's pooled values still come with their indices. `flat` is the call's output (or a
// value an op has stored now for the same reasons: NOTE [Tap scatters]).
void issue_library_call(const NodeRef& flat);

}  // namespace loom::aten

namespace loom::aten {

// The (B..., m, n) matrix product of values a (B..., m, k) and b (B..., k, n), batch dims
// of size 1 broadcasting: a BLAS extern call for float32/float64, else a generated
// reduction (ops_linalg.cpp).
NodeRef product(const NodeRef& a, const NodeRef& b, DType t);
// The same product (float32/float64, k > 0 only) as a flat storage of rows: the n results
// of each row lie between `margin` zeros on either side, so a row is n + 2 * margin long.
// Reads shifted by up to `margin` stay inside the storage and see zeros past a row's ends.
NodeRef product_rows_with_margin(const NodeRef& a, const NodeRef& b, DType t, int64_t margin);
bool blas_dtype(DType t);
// Stores a value into out; a fresh contiguous out whose value is a whole extern result
// (a BLAS product, a convolution) takes that result's storage instead of a copy of it.
void assign_result(const at::Tensor& out, const NodeRef& value);

// NOTE [Radix order]: an unsigned key per value that orders values as < does, -0.0 and 0.0
// as one (as == has them), so that a stable LSD radix sort of (key, position) pairs sorts
// values as a stable comparison sort does: sort's rows (NOTE [Radix sort] in
// ops_sort.cpp) and unique's (NOTE [Sorted unique]). Not for NaN, which callers key
// themselves. Half types key as their float values.
template <typename T>
uint64_t order_key(T v) {
  if constexpr (std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>) {
    return order_key(float(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    const T z = v == T(0) ? T(0) : v;
    U b;
    std::memcpy(&b, &z, sizeof b);
    const U sign = U(1) << (sizeof(U) * 8 - 1);
    return uint64_t((b & sign) ? U(~b) : U(b | sign));
  } else if constexpr (std::is_signed_v<T>) {
    return uint64_t(int64_t(v)) ^ (uint64_t(1) << 63);
  } else {
    return uint64_t(v);
  }
}

// Sorts `keys` and carries `pos` along, stably: a pass per byte of the keys less their
// minimum, skipping the bytes no two keys differ in. The keys come back less their
// minimum (equal keys stay equal).
void radix_sort(std::vector<uint64_t>& keys, std::vector<int64_t>& pos);

// In place, the result's dtype must cast safely to self's, as TensorIterator checks
// ("result type Float can't be cast to the desired output type Long"); torch 2.6's meta
// kernels do not always check it (in place on a transposed self), so the in-place forms
// check it after their meta call (binary ops, whose shape errors come first) or before it
// (unary ops: 2.6's meta of those is Python code with its own message), and so do the
// out= forms of pointwise ops (pointwise.h).
inline void check_result_fits(const at::Tensor& result, const at::Tensor& self) {
  TORCH_CHECK(c10::canCast(result.scalar_type(), self.scalar_type()), "result type ",
              result.scalar_type(), " can't be cast to the desired output type ",
              self.scalar_type());
}

// NOTE [Dtypes of the running torch]: which dtypes an op's CPU kernel has code for, and
// what it raises for the others, change between releases (torch 2.x added float16 to acosh,
// erfinv, the Bessel functions, ...; 1.13 refuses them), and so do the errors for an op's
// scalar arguments (softshrink's lambda). Loom takes both from the running torch: the first
// call of an op with a combination of operand dtypes runs its CPU form on one-element
// tensors of those dtypes (0-dim and wrapped numbers kept, so that they promote alike) and
// the call's other arguments; what that raises is raised (the CPU's type and message), and
// a combination that passed is remembered per op (an atomic flag: later calls cost a
// load). The probe comes after the shape checks (broadcasting errors come first on the
// CPU, and a probe has no shapes to disagree) and before the meta call, whose checks in
// 2.x are often Python decompositions with other messages.
class CpuVerdicts {
 public:
  // Runs probe() (which raises the CPU's error for operands of dtypes a and b, if any)
  // unless a probe with them passed before.
  template <class Probe>
  void check(c10::ScalarType a, c10::ScalarType b, Probe&& probe) const {
    std::atomic<bool>& ok = ok_[static_cast<size_t>(a) * kTypes + static_cast<size_t>(b)];
    if (ok.load(std::memory_order_acquire)) return;
    probe();
    ok.store(true, std::memory_order_release);
  }
  template <class Probe>
  void check(c10::ScalarType a, Probe&& probe) const {
    check(a, c10::ScalarType::Undefined, std::forward<Probe>(probe));
  }
  // check(a, probe) but for float16 and bfloat16, which CUDA's kernels take: Loom computes
  // those where the CPU has no kernel, as the elementwise core does.
  template <class Probe>
  void check_beside_reduced_floats(c10::ScalarType a, Probe&& probe) const {
    if (a != c10::ScalarType::Half && a != c10::ScalarType::BFloat16)
      check(a, std::forward<Probe>(probe));
  }

 private:
  static constexpr size_t kTypes = static_cast<size_t>(c10::ScalarType::NumOptions) + 1;
  mutable std::array<std::atomic<bool>, kTypes * kTypes> ok_{};
};

// A one-element CPU tensor of dtype t, an operand for a probe: a one (a zero would make an
// integer division raise).
inline at::Tensor probe_operand(c10::ScalarType t) {
  return at::ones({1}, at::TensorOptions().dtype(t));
}
// Ones of dtype t and these (small) sizes on the CPU: a probe for an op that wants a rank.
inline at::Tensor probe_operand(c10::ScalarType t, at::IntArrayRef sizes) {
  return at::ones(sizes, at::TensorOptions().dtype(t));
}

// A probe operand standing for t: its dtype, 0-dim if t is, a wrapped number if t is one.
inline at::Tensor probe_like(const at::Tensor& t) {
  at::Tensor p = t.dim() == 0 ? at::ones({}, at::TensorOptions().dtype(t.scalar_type()))
                              : probe_operand(t.scalar_type());
  if (t.unsafeGetTensorImpl()->is_wrapped_number())
    p.unsafeGetTensorImpl()->set_wrapped_number(true);
  return p;
}

// An empty CPU tensor of out's dtype, the out= of a probe (resized by the call).
inline at::Tensor probe_out(const at::Tensor& out) {
  return at::empty({0}, at::TensorOptions().dtype(out.scalar_type()));
}

// An aten op by name, for probes of ops whose C++ function one of the supported releases
// lacks (2.x's max.unary_out, _prelu_kernel): found when first called, which only a
// release that has the op does.
template <class Signature>
c10::TypedOperatorHandle<Signature> aten_op(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).typed<Signature>();
}

// NOTE [Shape errors of the running torch]: where a shape check of Loom's fails, the CPU's
// message for those sizes comes from the CPU's op: `cpu_call` runs it on zeros of the
// operands' sizes and dtypes (cpu_zeros_like), and what it raises is raised; Loom's own
// message (1.13's) where it does not raise. torch 2.x reworded many such checks
// ("inconsistent target size, expected 2 but got [3]"). Only on the failing path: a check
// that passes costs nothing.
inline at::Tensor cpu_zeros_like(const at::Tensor& t) {
  return at::zeros(t.sizes(), t.options().device(at::kCPU));
}
#define LOOM_CHECK_AS_CPU(cond, cpu_call, ...) \
  do {                                         \
    if (!(cond)) {                             \
      cpu_call;                                \
      TORCH_CHECK(false, __VA_ARGS__);         \
    }                                          \
  } while (0)

// The same for an op's call site outside Binary/Unary (pointwise.h): `call` runs the op on
// probes of its operands (statements); one table per call site.
#define LOOM_CPU_VERDICT(a_type, b_type, call)                          \
  do {                                                                  \
    static const ::loom::aten::CpuVerdicts loom_verdicts_;              \
    loom_verdicts_.check(a_type, b_type, [&] { call; });                \
  } while (0)

}  // namespace loom::aten
