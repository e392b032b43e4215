// Per-tensor affine quantized tensors (quint8, qint8, qint32) on Loom: storage, views,
// copies to and from the CPU, and the ways out of the quantized world (dequantize,
// int_repr, the quantization parameters). Quantized arithmetic is not implemented; those ops raise
// PyTorch's "not available for the 'QuantizedPrivateUse1' backend" error.
//
// A quantized tensor is torch's QTensorImpl over an ordinary Loom storage, so its views
// alias as any other tensor's do. Its integers are read through a plain integer tensor
// of the same storage, sizes, strides and offset: that tensor is the engine's whole view
// of the quantized one.
#include <ATen/ATen.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/empty_quantized_native.h>
#include <ATen/ops/q_scale_native.h>
#include <ATen/ops/q_zero_point_native.h>
#include <ATen/ops/qscheme_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/quantized/QTensorImpl.h>
#include <ATen/quantized/Quantizer.h>
#include <torch/library.h>

namespace loom::aten {

namespace {

using at::Tensor;

// The quantizer of a per-tensor affine tensor; other schemes cannot be made on Loom.
const at::PerTensorAffineQuantizer& affine_quantizer(const Tensor& q) {
  const auto* quantizer =
      dynamic_cast<const at::PerTensorAffineQuantizer*>(at::get_qtensorimpl(q)->quantizer().get());
  TORCH_CHECK(quantizer, "Loom supports per-tensor affine quantized tensors only, not ",
              toString(q.qscheme()));
  return *quantizer;
}

// A contiguous (or memory_format) quantized tensor over a fresh Loom storage.
Tensor new_quantized(at::IntArrayRef size, at::ScalarType type, c10::optional<at::Layout> layout,
                     const at::QuantizerPtr& quantizer,
                     c10::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
              "quantized tensors on Loom have the strided layout only");
  at::detail::check_size_nonnegative(size);
  const auto item = c10::scalarTypeToTypeMeta(type);
  const size_t nbytes = c10::multiply_integers(size) * item.itemsize();
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes,
                       c10::GetAllocator(c10::DeviceType::PrivateUse1), /*resizable=*/true);
  Tensor q = at::detail::make_tensor<at::QTensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::QuantizedPrivateUse1), item,
      quantizer);
  at::get_qtensorimpl(q)->set_sizes_contiguous(size);
  auto format = memory_format.value_or(at::MemoryFormat::Contiguous);
  if (format != at::MemoryFormat::Contiguous) at::get_qtensorimpl(q)->empty_tensor_restride(format);
  return q;
}

Tensor empty_affine_quantized(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                              c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                              c10::optional<bool> pin_memory, double scale, int64_t zero_point,
                              c10::optional<at::MemoryFormat> memory_format) {
  at::ScalarType type = dtype.value_or(at::kQUInt8);
  TORCH_CHECK(c10::isQIntType(type), "_empty_affine_quantized: ", type,
              " is not a quantized dtype");
  return new_quantized(size, type, layout,
                       at::make_per_tensor_affine_quantizer(scale, zero_point, type),
                       memory_format);
}

// torch.empty with a quantized dtype: as on the CPU, a tensor with an unknown quantizer.
Tensor empty_unknown_quantized(at::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                               c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                               c10::optional<bool> pin_memory,
                               c10::optional<at::MemoryFormat> memory_format) {
  at::ScalarType type = dtype.value_or(at::kQUInt8);
  return new_quantized(size, type, layout, at::make_unknown_quantizer(type), memory_format);
}

// The integers of q, as a Loom tensor of q's underlying integer type sharing its storage.
Tensor integers_of(const Tensor& q) {
  at::ScalarType underlying = c10::toUnderlying(q.scalar_type());
  Tensor ints = at::empty({0}, q.options().dtype(underlying).device(q.device()));
  ints.set_(q.storage(), q.storage_offset(), q.sizes(), q.strides());
  return ints;
}

Tensor int_repr(const Tensor& q) { return integers_of(q).clone(at::MemoryFormat::Preserve); }

// As the CPU: (q - zero_point) * scale, with the scale in float.
Tensor dequantize(const Tensor& q) {
  const auto& quantizer = affine_quantizer(q);
  Tensor ints = integers_of(q).to(at::kInt);
  return (ints - quantizer.zero_point()).to(at::kFloat).mul_(float(quantizer.scale()));
}

// Copies between quantized tensors, Loom and CPU either way (copy_ dispatches here when
// either side is a Loom one): as the CPU, the destination takes the source's quantizer,
// then the integers are copied. Quantizing a float tensor (the CPU's copy from float) has
// no Loom kernel.
Tensor& copy_quantized(Tensor& self, const Tensor& src, bool non_blocking) {
  TORCH_CHECK(self.is_quantized(),
              "Copying from quantized Tensor to non-quantized Tensor is not allowed, please use "
              "dequantize to get a float Tensor from a quantized Tensor");
  TORCH_CHECK_NOT_IMPLEMENTED(src.is_quantized(),
                              "Loom cannot quantize a float tensor by copy_; use "
                              "torch.quantize_per_tensor on the CPU and move the result");
  TORCH_CHECK(self.qscheme() == src.qscheme(), "Quantized Copy only works with same qscheme");
  TORCH_CHECK(self.scalar_type() == src.scalar_type());  // the CPU's message
  at::set_quantizer_(self, at::get_qtensorimpl(src)->quantizer());
  integers_of(self).copy_(integers_of(src), non_blocking);
  return self;
}

Tensor copy_from_quantized(const Tensor& self, const Tensor& dst, bool non_blocking) {
  Tensor out = dst;
  return copy_quantized(out, self, non_blocking);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, QuantizedPrivateUse1, m) {
  m.impl("_empty_affine_quantized", TORCH_FN(empty_affine_quantized));
  m.impl("empty.memory_format", TORCH_FN(empty_unknown_quantized));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_qtensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("q_scale", TORCH_FN(at::native::q_scale_quant));
  m.impl("q_zero_point", TORCH_FN(at::native::q_zero_point_quant));
  m.impl("qscheme", TORCH_FN(at::native::qscheme_quant));
  m.impl("int_repr", TORCH_FN(int_repr));
  m.impl("dequantize.self", TORCH_FN(dequantize));
  m.impl("empty_quantized", TORCH_FN(at::native::empty_quantized));
  m.impl("copy_", TORCH_FN(copy_quantized));
  m.impl("_copy_from", TORCH_FN(copy_from_quantized));
  m.impl("clone", TORCH_FN(at::native::quantized_clone));
}

}  // namespace loom::aten
