// Views and storage metadata. A Loom view is a TensorImpl over the shared StorageImpl with
// its own (sizes, strides, offset), exactly as on CPU, so these are the generic ATen
// kernels; the engine is only involved when a storage grows.
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "aten/tensor_util.h"
#include "aten/torch_compat.h"

namespace loom::aten {

void resize_storage_bytes(const c10::Storage& storage, size_t nbytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
  TORCH_INTERNAL_ASSERT(is_loom_data_ptr(impl->data_ptr()));
  c10::DataPtr fresh = loom_allocator()->allocate(nbytes);
  copy_bytes(*static_cast<Buffer*>(fresh.get_context()),
             *static_cast<Buffer*>(impl->data_ptr().get_context()),
             int64_t(std::min(nbytes, storage.nbytes())));
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(nbytes);
}
namespace {

// NOTE [Storage growth]: CPU grows a storage by memcpy into a new allocation. Here the new
// Buffer's value becomes "its old bytes stored at offset 0 of fresh memory", a lazy write
// that realizes with the next kernel touching it. Every alias shares the StorageImpl, so
// swapping its DataPtr moves them all to the new Buffer.
void grow_storage(const c10::Storage& storage, size_t nbytes) {
  if (nbytes <= storage.nbytes()) return;
  resize_storage_bytes(storage, nbytes);
}

void grow_storage_for(const at::Tensor& self) {
  if (self.numel() == 0) return;  // as CPU: an empty tensor's storage may stay smaller
  grow_storage(self.storage(),
               at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.element_size(),
                                                self.storage_offset()));
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          c10::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!has_names(self), "Loom does not support named tensors in resize_");
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, c10::nullopt,
                               /*resize_storage=*/false);
  if (memory_format) {
    TORCH_CHECK(*memory_format != at::MemoryFormat::Preserve, "Unsupported memory format ",
                *memory_format);
    self.unsafeGetTensorImpl()->empty_tensor_restride(*memory_format);
  }
  grow_storage_for(self);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        at::IntArrayRef size, at::IntArrayRef stride) {
  // PyTorch's checks first, for its messages (a CPU storage is a device mismatch).
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  TORCH_CHECK(is_loom_data_ptr(source.data_ptr()), "set_: the storage is not a Loom storage");
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  at::OptionalIntArrayRef stride_opt;
  if (stride.data() != nullptr) stride_opt = stride;
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size, stride_opt,
                               /*resize_storage=*/false);
  grow_storage_for(self);
  return self;
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, loom_allocator(), /*resizable=*/true);
  return self.set_(storage, 0, {0}, {});
}

at::Tensor view_dtype(const at::Tensor& self, at::ScalarType dtype) {
  to_loom(dtype);
  return at::native::view_dtype(self, dtype);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("view.dtype", TORCH_FN(view_dtype));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  // Restrided views of the same storage in the parts' (or the complex) dtype; a Buffer is
  // bytes, so reads and writes through either dtype meet in one value.
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(at::native::set_));
  m.impl("set_.source_Tensor", TORCH_FN(at::native::set_tensor_));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("is_set_to", TORCH_FN(at::native::is_set_to));
}

}  // namespace loom::aten
