#include "aten/tensor_util.h"
#include "schedule/realize.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <c10/util/Exception.h>

namespace loom::aten {

bool is_loom(const at::Tensor& t) { return t.defined() && t.device().type() == kLoomDeviceType; }

Buffer& buffer_of(const at::Tensor& t) {
  TORCH_CHECK(is_loom(t), "expected a Loom tensor, got one on ", t.device());
  const c10::DataPtr& ptr = t.storage().data_ptr();
  if (is_loom_data_ptr(ptr)) return *static_cast<Buffer*>(ptr.get_context());
  // A tensor made by at::from_blob over a Loom storage's data pointer, which is its Buffer
  // (allocator.cpp): torch 2.x's Storage._write_file (pickling a storage) copies a device's
  // storage to the CPU through one. Only a live Buffer's address is taken for one.
  if (ptr.get() != nullptr && t.storage().nbytes() > 0) {
    EngineLock g(engine_mutex());
    for (Buffer* b : live_buffers())
      if (b == ptr.get()) {
        TORCH_CHECK(int64_t(t.storage().nbytes()) <= b->nbytes,
                    "a Loom tensor over a Loom storage's data pointer reaches past its end");
        return *b;
      }
  }
  TORCH_INTERNAL_ASSERT(false, "Loom tensor whose storage has no loom::Buffer");
}

// X(aten scalar type, loom dtype)
// clang-format off
#define LOOM_ATEN_DTYPES(X)                                                  \
  X(Bool, Bool) X(Byte, UInt8) X(Char, Int8) X(Short, Int16) X(Int, Int32) \
  X(Long, Int64) X(Half, Float16) X(BFloat16, BFloat16) X(Float, Float32)  \
  X(Double, Float64) X(ComplexHalf, Complex32) X(ComplexFloat, Complex64) X(ComplexDouble, Complex128)
// clang-format on

DType to_loom(c10::ScalarType t) {
#define X(aten, loom) \
  if (t == c10::ScalarType::aten) return DType::loom;
  LOOM_ATEN_DTYPES(X)
#undef X
  TORCH_CHECK_TYPE(false, "Loom does not support dtype ", t);
}

c10::ScalarType to_aten(DType t) {
#define X(aten, loom) \
  if (t == DType::loom) return c10::ScalarType::aten;
  LOOM_ATEN_DTYPES(X)
#undef X
  TORCH_INTERNAL_ASSERT(false, "unknown loom dtype ", int(t));
}

Shape shape_of(c10::IntArrayRef sizes) { return Shape(sizes.begin(), sizes.end()); }

View view_of(const at::Tensor& t) {
  return View{shape_of(t.sizes()), shape_of(t.strides()), t.storage_offset()};
}

void copy_bytes(Buffer& dst, const Buffer& src, int64_t nbytes) {
  if (nbytes <= 0) return;
  EngineLock g(engine_mutex());
  View bytes = View::contiguous({nbytes});
  loom::write(dst, DType::UInt8, bytes, loom::read(src, DType::UInt8, bytes));
}

NodeRef read_tensor(const at::Tensor& t) {
  DType dtype = to_loom(t.scalar_type());
  EngineLock g(engine_mutex());
  return loom::read(buffer_of(t), dtype, view_of(t));
}

void write_tensor(const at::Tensor& dst, const NodeRef& value) {
  DType dtype = to_loom(dst.scalar_type());
  EngineLock g(engine_mutex());
  loom::write(buffer_of(dst), dtype, view_of(dst), value);
}

void throw_fault(const KernelFault& f) {
  TORCH_CHECK_INDEX(f.kind != FaultKind::Index, f.what());
  TORCH_CHECK(false, f.what());
}

const char* storage_bytes(const at::Tensor& t) {
  try {
    return static_cast<const char*>(realized_data(buffer_of(t)));
  } catch (const KernelFault& f) {
    throw_fault(f);
  }
}

namespace {
constexpr c10::DispatchKeySet kLoomKeys{kLoomDispatchKey};
}

at::Tensor empty_loom(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::ScalarType dtype) {
  to_loom(dtype);
  return at::detail::empty_strided_generic(sizes, strides, loom_allocator(), kLoomKeys, dtype);
}

at::Tensor loom_tensor_of(const std::vector<int64_t>& values, c10::IntArrayRef shape,
                          c10::ScalarType dtype) {
  return at::tensor(values, at::kLong).reshape(shape).to(c10::Device(kLoomDeviceType, 0), dtype);
}

at::Tensor empty_loom(c10::IntArrayRef sizes, c10::ScalarType dtype, c10::MemoryFormat format) {
  to_loom(dtype);
  return at::detail::empty_generic(sizes, loom_allocator(), kLoomKeys, dtype, format);
}

}  // namespace loom::aten
