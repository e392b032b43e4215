// Creating Loom tensors and moving values across the device boundary. Copies into a
// Loom tensor are lazy writes; only copies out of Loom realize.
#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/from_blob.h>
#include <torch/library.h>

#include <cstring>

#include "aten/tensor_util.h"
#include "schedule/realize.h"

namespace loom::aten {
namespace {

void check_factory_args(c10::optional<at::Layout> layout, c10::optional<at::Device> device) {
  TORCH_CHECK(c10::layout_or_default(layout) == at::kStrided,
              "Loom supports only strided tensors, got layout ", *layout);
  if (device) {
    TORCH_CHECK(device->type() == kLoomDeviceType, "expected a Loom device, got ", *device);
    TORCH_CHECK(!device->has_index() || device->index() == 0, "Loom has one device (index 0), got ",
                *device);
  }
}

at::Tensor empty_memory_format(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory,
                               c10::optional<at::MemoryFormat> memory_format) {
  check_factory_args(layout, device);
  return empty_loom(size, c10::dtype_or_default(dtype),
                    memory_format.value_or(at::MemoryFormat::Contiguous));
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                         c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                         c10::optional<at::Device> device, c10::optional<bool> pin_memory) {
  check_factory_args(layout, device);
  return empty_loom(size, stride, c10::dtype_or_default(dtype));
}

// As copy_'s TensorIterator on CPU: dst takes part in broadcasting and must come out of it
// unchanged, so a mismatch gets CPU's message.
void check_copy_shapes(const at::Tensor& dst, const at::Tensor& src) {
  auto shape = at::infer_size_dimvector(dst.sizes(), src.sizes());
  TORCH_CHECK(dst.sizes().equals(shape), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", shape);
}

void copy_host_to_loom(const at::Tensor& src, const at::Tensor& dst) {
  DType dtype = to_loom(dst.scalar_type());
  at::assert_no_internal_overlap(dst);
  check_copy_shapes(dst, src);
  at::Tensor host = src.to(at::kCPU).resolve_conj().resolve_neg();
  host = host.to(dst.scalar_type()).expand(dst.sizes());
  if (dst.is_neg()) host = host.neg();
  if (dst.is_conj()) host = host.conj_physical();
  host = host.contiguous();
  if (dst.numel() == 0) return;

  EngineLock g(engine_mutex());
  Buffer& buffer = buffer_of(dst);
  if (dst.storage_offset() == 0 && int64_t(host.nbytes()) == buffer.nbytes &&
      is_dense_cover(view_of(dst), dst.numel())) {
    // The copy replaces the whole storage: its bytes become the new realized value, with
    // no kernel, and an index tensor copied in can be bounds-checked at the op (check_now).
    // Pending readers of the old value keep the old memory.
    at::Tensor laid = at::empty_strided(dst.sizes(), dst.strides(), host.options());
    laid.copy_(host);
    write_host(buffer, laid.data_ptr(), laid.nbytes());
    return;
  }
  // A staging buffer lets the engine treat host bytes like any other storage value; the
  // value outlives the Buffer because the load below holds it.
  Buffer staging(int64_t(host.nbytes()));
  write_host(staging, host.data_ptr(), host.nbytes());
  NodeRef v = loom::read(staging, dtype, View::contiguous(shape_of(dst.sizes())));
  loom::write(buffer, dtype, view_of(dst), v);
}

void copy_loom_to_host(const at::Tensor& src, const at::Tensor& dst) {
  to_loom(src.scalar_type());
  auto options = at::TensorOptions().dtype(src.scalar_type()).device(at::kCPU);
  if (src.numel() == 0) {
    dst.copy_(at::empty(src.sizes(), options));
    return;
  }
  // The lock stays held through the copy: another thread's write could otherwise
  // reinplace or free the memory being read.
  EngineLock g(engine_mutex());
  auto* base = const_cast<char*>(storage_bytes(src));
  at::Tensor host = at::from_blob(base + src.storage_offset() * src.element_size(), src.sizes(),
                                  src.strides(), options);
  host._set_neg(src.is_neg());
  host._set_conj(src.is_conj());
  dst.copy_(host);
}

void copy_loom_to_loom(const at::Tensor& src, const at::Tensor& dst) {
  DType src_dtype = to_loom(src.scalar_type());
  DType dst_dtype = to_loom(dst.scalar_type());
  at::assert_no_internal_overlap(dst);
  at::assert_no_partial_overlap(dst, src);
  check_copy_shapes(dst, src);
  if (dst.numel() == 0) return;

  EngineLock g(engine_mutex());
  // A tensor with the negative (conjugate) bit stores the negation (conjugate) of its
  // logical value; only complex tensors carry the conjugate bit.
  NodeRef v = loom::read(buffer_of(src), src_dtype, view_of(src));
  if (src_dtype == dst_dtype) {
    if (src.is_conj() != dst.is_conj()) v = unary(Op::Conj, v);
    if (src.is_neg() != dst.is_neg()) v = unary(Op::Neg, v);
  } else {
    if (src.is_conj()) v = unary(Op::Conj, v);
    if (src.is_neg()) v = unary(Op::Neg, v);
    if (is_complex(src_dtype) && !is_complex(dst_dtype)) {
      TORCH_WARN_ONCE("Casting complex values to real discards the imaginary part");
    }
    v = cast(v, dst_dtype);
    if (dst.is_conj()) v = unary(Op::Conj, v);
    if (dst.is_neg()) v = unary(Op::Neg, v);
  }
  if (src.sizes() != dst.sizes()) v = expand(v, shape_of(dst.sizes()));
  loom::write(buffer_of(dst), dst_dtype, view_of(dst), v);
}

// Reached from Tensor::copy_ whenever either side is a Loom tensor; `self` is the source.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  if (is_loom(self) && is_loom(dst)) {
    copy_loom_to_loom(self, dst);
  } else if (is_loom(dst)) {
    copy_host_to_loom(self, dst);
  } else {
    copy_loom_to_host(self, dst);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "_local_scalar_dense: the tensor has no elements");
  to_loom(self.scalar_type());
  EngineLock g(engine_mutex());
  auto* p = storage_bytes(self) +
            self.storage_offset() * self.element_size();
  c10::Scalar result;
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND4(at::kHalf, at::kBool, at::kBFloat16, at::kComplexHalf,
                                         self.scalar_type(),
                                         "_local_scalar_dense_loom", [&] {
                                           scalar_t value;
                                           std::memcpy(&value, p, sizeof(scalar_t));
                                           result = c10::Scalar(value);
                                         });
  return result;
}

// torch 2.x's copy-on-write clone. Its generic form would wrap the storage's DataPtr in a
// copy-on-write context, which is no Buffer; on Loom the whole storage's bytes are copied
// lazily (nothing moves until a kernel reads them), viewed as self is.
at::Tensor lazy_clone(const at::Tensor& self) {
  const c10::Storage& source = self.storage();
  auto nbytes = int64_t(source.nbytes());
  at::Tensor bytes = empty_loom({nbytes}, {1}, at::kByte);
  copy_bytes(buffer_of(bytes), buffer_of(self), nbytes);
  return empty_loom({0}, {1}, self.scalar_type())
      .set_(bytes.storage(), self.storage_offset(), self.sizes(), self.strides());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_lazy_clone", TORCH_FN(lazy_clone));  // an op of torch 2.x only
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

// The math-bit fallbacks would resolve a conj/neg source by copying it, which re-enters
// _copy_from forever; copy_from handles the bits itself.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace loom::aten
