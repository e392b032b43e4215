#include "aten/op_util.h"

#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/TypeProperties.h>
#include <c10/util/strides.h>

#include <cstring>

#include "core/known.h"
#include "core/node_map.h"
#include "schedule/realize.h"

namespace loom::aten {

at::Tensor to_meta(const at::Tensor& t) {
  if (!t.defined()) return t;
  // A Python number stays the CPU scalar it is: meta kernels take CPU scalars beside meta
  // tensors, and torch 2.x runs some meta kernels in Python, whose conversion of arguments
  // accepts a wrapped number only on the CPU.
  if (t.unsafeGetTensorImpl()->is_wrapped_number() && t.is_cpu()) return t;
  // Made directly rather than through the dispatcher (at::empty_strided): every op makes
  // one or two, and the dispatch cost a tenth of a tiny op's host time.
  at::Tensor m = at::detail::empty_strided_meta(t.sizes(), t.strides(), t.scalar_type());
  if (t.unsafeGetTensorImpl()->is_wrapped_number())
    m.unsafeGetTensorImpl()->set_wrapped_number(true);
  return m;
}

c10::optional<at::Tensor> to_meta(const c10::optional<at::Tensor>& t) {
  if (!t.has_value()) return t;
  return to_meta(*t);
}

at::Tensor to_meta_out(const at::Tensor& out, const at::Tensor& a, const at::Tensor& meta_a,
                       const at::Tensor& b, const at::Tensor& meta_b) {
  if (out.is_same(a)) return meta_a;
  if (b.defined() && out.is_same(b)) return meta_b;
  return to_meta(out);
}

NodeRef scalar_node(const c10::Scalar& s, const Shape& shape, DType dtype) {
  c10::complex<double> z = s.isComplex() ? s.toComplexDouble() : c10::complex<double>();
  Scalar v = s.isComplex()         ? Scalar::of_complex(z.real(), z.imag())
             : s.isFloatingPoint() ? Scalar::of_float(s.toDouble())
             : s.isBoolean()       ? Scalar::of_int(s.toBool())
                                   : Scalar::of_int(s.toLong());
  return constant(v, dtype, shape);
}

namespace {

// The value of a CPU 0-dim tensor. A wrapped Python number (scalar_to_tensor's double,
// long, bool or complex double) is read in place: item() dispatched twice, a twentieth of
// a tiny op's host time.
c10::Scalar cpu_scalar(const at::Tensor& t) {
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
    const void* p = t.data_ptr();
    switch (t.scalar_type()) {
      case at::kDouble: return *static_cast<const double*>(p);
      case at::kLong: return *static_cast<const int64_t*>(p);
      case at::kBool: return *static_cast<const bool*>(p);
      case at::kComplexDouble: return *static_cast<const c10::complex<double>*>(p);
      default: break;
    }
  }
  return t.item();
}

}  // namespace

NodeRef operand(const at::Tensor& t, const Shape& shape, DType dtype) {
  if (!is_loom(t)) {
    TORCH_CHECK(t.dim() == 0, "Expected all tensors to be on the same device, but found a ",
                t.device(), " tensor of ", t.dim(), " dims with a Loom tensor");
    return scalar_node(cpu_scalar(t), shape, dtype);
  }
  return cast(expand(read_tensor(t), shape), dtype);
}

c10::ScalarType promoted(const at::Tensor& a, const at::Tensor& b) {
  at::native::ResultTypeState state;
  state = at::native::update_result_type_state(a, state);
  state = at::native::update_result_type_state(b, state);
  return at::native::result_type(state);
}

at::Tensor result_like(const at::Tensor& meta) {
  return empty_loom(meta.sizes(), meta.strides(), meta.scalar_type());
}

// As CPU's structured kernels: an out of the right size keeps its strides; a resized one
// takes the layout the op computed.
void match_out(at::Tensor& out, const at::Tensor& meta_out) {
  if (out.sizes() == meta_out.sizes()) return;
  out.resize_(meta_out.sizes());
  if (out.strides() != meta_out.strides()) out.as_strided_(meta_out.sizes(), meta_out.strides());
}

namespace {

// As TensorIterator: an elementwise result may not partly overlap an input it reads (the
// same elements with the same strides are fine: that is an in-place op). Reductions and
// gathers below the value read everything first, so they are not checked, as on CPU. As
// the CPU's get_overlap_status, only views that are non-overlapping and dense are compared
// (interleaved views, such as two chunks of a row, are "too hard": not an error; a GRU
// cell's `hgates[2].mul_(hgates[0])` raised here).
void check_partial_overlap(const at::Tensor& dst, const NodeRef& value) {
  if (value->src.empty()) return;  // a constant (a fill, a Python number): nothing read
  const NodeRef& held = buffer_of(dst).value();
  // A load of dst's value holds that node: when its buffer is the only holder (always so
  // for a fresh result), the value reads nothing of dst.
  if (held.use_count() == 1) return;
  const Node* current = held.get();
  const int64_t dsize = dst.element_size();
  // The byte range of a non-overlapping, dense view; false for any other (or an empty one).
  auto span = [](const View& v, int64_t size, int64_t& lo, int64_t& hi) {
    lo = v.offset, hi = v.offset + 1;
    int64_t numel = 1;
    for (size_t d = 0; d < v.sizes.size(); ++d) {
      if (v.sizes[d] == 0) return false;
      (v.strides[d] < 0 ? lo : hi) += (v.sizes[d] - 1) * v.strides[d];
      numel *= v.sizes[d];
    }
    if (hi - lo != numel || !is_non_overlapping(v)) return false;
    lo *= size, hi *= size;
    return true;
  };
  int64_t out_lo, out_hi;
  View out = view_of(dst);
  if (!span(out, dsize, out_lo, out_hi)) return;
  std::vector<const Node*> stack{value.get()};
  NodeSet seen;
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n)) continue;
    if (n->op == Op::Reduce || n->op == Op::Scan || n->op == Op::Gather) continue;
    if (n->op == Op::Load) {
      if (n->src[0].get() != current) continue;
      int64_t lo, hi;
      if (!span(n->view(), itemsize(n->dtype), lo, hi) || hi <= out_lo || out_hi <= lo) continue;
      bool full = lo == out_lo && hi == out_hi && n->view().strides == out.strides;
      TORCH_CHECK(full,
                  "unsupported operation: some elements of the input tensor and the "
                  "written-to tensor refer to a single memory location. Please clone() the "
                  "tensor before performing the operation.");
      continue;
    }
    for (const auto& s : n->src) stack.push_back(s.get());
  }
}

}  // namespace

void assign(const at::Tensor& dst, const NodeRef& value) {
  EngineLock g(engine_mutex());
  check_partial_overlap(dst, value);
  write_tensor(dst, cast(value, to_loom(dst.scalar_type())));
}

void check_not_complex(const char* kernel, c10::ScalarType t) {
  TORCH_CHECK(!at::isComplexType(t), "\"", kernel, "\" not implemented for '", c10::toString(t),
              "'");
}

bool warn_if_expanded(const at::Tensor& self, const char* op, const char* example) {
  if (at::has_internal_overlap(self) != at::MemOverlap::Yes) return false;
  TORCH_WARN("Use of ", op, " on expanded tensors is deprecated. Please clone() the tensor ",
             "before performing this operation. This also applies to advanced indexing e.g. ",
             example);
  return true;
}

void mask_dtype_as_cpu(const at::Tensor& mask,
                       const std::function<void(const at::Tensor&)>& cpu_op) {
  if (mask.scalar_type() != at::kBool) cpu_op(at::zeros({1}, mask.options().device(at::kCPU)));
}

void check_scalar_fits(const c10::Scalar& v, c10::ScalarType t) {
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND4(at::kBool, at::kHalf, at::kBFloat16, at::kComplexHalf, t,
                                         "loom_scalar_fits", [&] { (void)v.to<scalar_t>(); });
}

void check_operands(const char* op, std::initializer_list<at::Tensor> ts) {
  for (const auto& t : ts) {
    if (!t.defined() || is_loom(t)) continue;
    TORCH_CHECK(t.device().is_cpu() && t.dim() == 0,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                t.device(), " and ", "privateuseone:0! (when checking argument for ", op, ")");
  }
}

}  // namespace loom::aten

namespace loom::aten {

NodeRef int_const(int64_t v, const Shape& shape) {
  return constant(Scalar::of_int(v), DType::Int64, shape);
}

// NOTE [Max-pool indices by score]: the CPU's max pooling takes an element when it is
// greater than the window's running maximum or NaN: the first maximum, or the last NaN.
// As an arg reduction that is a compare of order keys and a select of the position per
// element, which gcc 12 left scalar in a window loop across channels (the padding's
// constant, hoisted out of the loop by unswitching, defeats its vectorizer), and the
// position then had to be divided back into coordinates. Instead, once the maximum is
// known, each element scores its flat input index: a NaN 2P + index, the maximum P - index
// (the first scores highest), anything else -1 (P the plane's size). Flat indices grow
// with the window position, so the highest score is the CPU's element, and the reduction
// is a plain integer max of selects, in 32 bits where 3P fits: channels-last 16x64x32x32,
// 3x3 stride 2 windows with indices, 0.45 -> 0.1x ms.
double lowest_value(c10::ScalarType t) {
  if (at::isFloatingType(t)) return -std::numeric_limits<double>::infinity();
  double v = 0;
  AT_DISPATCH_INTEGRAL_TYPES_AND(at::kBool, t, "lowest_value",
                                 [&] { v = double(std::numeric_limits<scalar_t>::lowest()); });
  return v;
}

NodeRef pooling_index(const NodeRef& window, const NodeRef& valid, const NodeRef& flat,
                      const NodeRef& max, const std::vector<int>& axes, int64_t plane,
                      const std::function<NodeRef(const NodeRef&)>& drop) {
  const Shape& s = window->shape;
  const DType st = 3 * plane + 2 < (int64_t(1) << 31) ? DType::Int32 : DType::Int64;
  auto c = [&](int64_t v) { return constant(Scalar::of_int(v), st, s); };
  NodeRef f = cast(flat, st);
  NodeRef score = where(
      valid,
      where(binary(Op::Ne, window, window), binary(Op::Add, c(2 * plane), f),
            where(binary(Op::Eq, window, expand(max, s)), binary(Op::Sub, c(plane), f), c(-1))),
      c(-1));
  // Decoded after the window dims are dropped: the index is then a value of its own, not
  // a reindex of one, and a cohort stores it as the tensor holds it (NOTE [Cohorts]).
  NodeRef best = drop(reduce(ReduceKind::Max, score, axes, st));
  const Shape& r = best->shape;
  auto cr = [&](int64_t v) { return constant(Scalar::of_int(v), st, r); };
  return cast(where(binary(Op::Ge, best, cr(2 * plane)), binary(Op::Sub, best, cr(2 * plane)),
                    binary(Op::Sub, cr(plane), best)),
              DType::Int64);
}

NodeRef index_value(const at::Tensor& index, const Shape& shape) {
  at::Tensor i = is_loom(index) ? index : index.to(c10::Device(kLoomDeviceType, 0));
  return cast(expand(read_tensor(i), shape), DType::Int64);
}

NodeRef storage_index(const at::Tensor& self, const std::vector<NodeRef>& coord) {
  TORCH_INTERNAL_ASSERT(!coord.empty() && int64_t(coord.size()) == self.dim());
  const Shape& shape = coord[0]->shape;
  NodeRef at = int_const(self.storage_offset(), shape);
  for (int64_t d = 0; d < self.dim(); ++d) {
    // Size-1 dims stay: their coordinate may carry a bounds check.
    NodeRef term = coord[d];
    if (self.stride(d) != 1) term = binary(Op::Mul, term, int_const(self.stride(d), shape));
    at = binary(Op::Add, at, term);
  }
  return at;
}

NodeRef checked(const NodeRef& index, int64_t size, bool wrap, bool index_error,
                const std::string& message) {
  int msg = fault_message(index_error ? FaultKind::Index : FaultKind::Runtime, message);
  return check_index(index, size, wrap, msg);
}

namespace {

// Index values seen on the host: the first bad one raises as the kernel's check would.
struct EagerCheck {
  int64_t size;
  bool wrap;
  std::optional<int64_t> skip;
  std::optional<int64_t> bad;
  bool plain = true;  // every value in [0, size)
  void operator()(int64_t x) {
    plain &= x >= 0 && x < size;
    if (!bad && !((x >= 0 ? x < size : (wrap && x >= -size)) || x == skip)) bad = x;
  }
  // Raises for a bad value; returns whether every value was in [0, size).
  bool finish(bool index_error, const std::string& message) const {
    if (!bad) return plain;
    std::string text = message;
    auto at = text.find("{}");
    if (at != std::string::npos) text.replace(at, 2, std::to_string(*bad));
    TORCH_CHECK_INDEX(!index_error, text);
    TORCH_CHECK(false, text);
  }
  // A contiguous run of n values: its range first (a loop that vectorizes), each value
  // only when some lie outside [0, size).
  template <typename T>
  void run(const T* p, int64_t n) {
    T lo = p[0], hi = p[0];
    for (int64_t i = 1; i < n; ++i) {
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
    if (lo >= 0 && int64_t(hi) < size) return;
    for (int64_t i = 0; i < n; ++i) (*this)(int64_t(p[i]));
  }
};

// The dims of an index longer than 1, outermost first: row-major, or in memory order.
std::vector<size_t> walk_order(at::IntArrayRef sizes, at::IntArrayRef strides, bool memory_order) {
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) dims.push_back(d);
  if (memory_order)
    std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) {
      return std::abs(strides[a]) > std::abs(strides[b]);
    });
  return dims;
}

// Checks each element of a strided int64 or int32 array, dims walked in `dims` order: a
// row at a time, a run where its elements are adjacent. (Element by element, a realized
// index of 64K entries took 130 us to check, longer than its gather.)
template <typename T>
void check_array(const T* p, at::IntArrayRef sizes, at::IntArrayRef strides,
                 const std::vector<size_t>& dims, EagerCheck& check) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  if (dims.empty()) return check(int64_t(*p));
  const int64_t inner = sizes[dims.back()], step = strides[dims.back()];
  std::vector<int64_t> at(dims.size(), 0);
  for (int64_t i = 0; i < n; i += inner) {
    if (step == 1) {
      check.run(p, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) check(int64_t(p[j * step]));
    }
    for (size_t k = dims.size() - 1; k-- > 0;) {  // odometer step over the outer dims
      const size_t d = dims[k];
      p += strides[d];
      if (++at[k] < sizes[d]) break;
      p -= sizes[d] * strides[d];
      at[k] = 0;
    }
  }
}

void check_array(const char* base, bool is_long, at::IntArrayRef sizes, at::IntArrayRef strides,
                 bool memory_order, EagerCheck& check) {
  const std::vector<size_t> dims = walk_order(sizes, strides, memory_order);
  if (is_long)
    check_array(reinterpret_cast<const int64_t*>(base), sizes, strides, dims, check);
  else
    check_array(reinterpret_cast<const int32_t*>(base), sizes, strides, dims, check);
}

}  // namespace

// A realized index is read where it lies, without a host copy: a GPT step checks its
// token indices this way in every embedding and loss.
bool check_now(const at::Tensor& index, int64_t size, bool wrap, bool index_error,
               const std::string& message, std::optional<int64_t> skip, bool memory_order) {
  if (index.numel() == 0 || index.numel() > kMaxEagerCheck) return false;
  if (index.scalar_type() != at::kLong && index.scalar_type() != at::kInt) return false;
  EagerCheck check{size, wrap, skip};
  const bool is_long = index.scalar_type() == at::kLong;
  if (!is_loom(index)) {
    const char* base = static_cast<const char*>(index.data_ptr());
    check_array(base, is_long, index.sizes(), index.strides(), memory_order, check);
  } else {
    EngineLock g(engine_mutex());
    if (buffer_of(index).value()->realized) {
      const char* base = storage_bytes(index) + index.storage_offset() * index.element_size();
      check_array(base, is_long, index.sizes(), index.strides(), memory_order, check);
    } else if (auto values = known_values(read_tensor(index), kMaxKnownCheck)) {
      // NOTE [Known values]: row-major values, walked in the order the index's own strides
      // give.
      check_array(values->data(), index.sizes(), c10::contiguous_strides(index.sizes()),
                  walk_order(index.sizes(), index.strides(), memory_order), check);
    } else {
      return false;
    }
  }
  return check.finish(index_error, message);
}

NodeRef checked_known(const NodeRef& index, int64_t size, bool index_error,
                      const std::string& message) {
  if (auto values = known_values(index, kMaxKnownCheck)) {
    EagerCheck check{size, false, std::nullopt};
    for (int64_t x : *values) check(x);
    if (check.finish(index_error, message)) return index;
  }
  return checked(index, size, false, index_error, message);
}

NodeRef checked_now(const at::Tensor& index, const NodeRef& value, int64_t size, bool wrap,
                    bool index_error, const std::string& message, std::optional<int64_t> skip,
                    bool memory_order) {
  if (check_now(index, size, wrap, index_error, message, skip, memory_order)) return value;
  return checked(value, size, wrap, index_error, message);
}

std::string bounds_message(int64_t dim, int64_t size, const char* prefix) {
  return std::string(prefix) + "index {} is out of bounds for dimension " + std::to_string(dim) +
         " with size " + std::to_string(size);
}

void issue_library_call(const NodeRef& flat) {
  try {
    realize_value(flat);
  } catch (const KernelFault& f) {
    throw_fault(f);  // an operand's index check, raised at the op as on the CPU
  }
}

void radix_sort(std::vector<uint64_t>& keys, std::vector<int64_t>& pos) {
  const size_t n = keys.size();
  uint64_t lo = ~uint64_t(0);
  for (uint64_t k : keys) lo = std::min(lo, k);
  uint64_t any = 0, every = ~uint64_t(0);
  for (uint64_t& k : keys) {
    k -= lo;  // small integers of both signs then differ in their low bytes only
    any |= k;
    every &= k;
  }
  std::vector<uint64_t> k2(n);
  std::vector<int64_t> p2(n);
  for (int shift = 0; shift < 64; shift += 8) {
    if ((((any ^ every) >> shift) & 0xff) == 0) continue;  // one byte for all keys
    size_t start[257] = {0};
    for (uint64_t k : keys) start[((k >> shift) & 0xff) + 1]++;
    for (int d = 0; d < 256; ++d) start[d + 1] += start[d];
    for (size_t i = 0; i < n; ++i) {
      const size_t at = start[(keys[i] >> shift) & 0xff]++;
      k2[at] = keys[i];
      p2[at] = pos[i];
    }
    keys.swap(k2);
    pos.swap(p2);
  }
}


bool composite_in_this_release(const char* name) {
  const std::string full(name);
  const size_t dot = full.find('.');
  c10::OperatorName op("aten::" + full.substr(0, dot),
                       dot == std::string::npos ? "" : full.substr(dot + 1));
  auto handle = c10::Dispatcher::singleton().findOp(op);
  return handle && handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
}

}  // namespace loom::aten
