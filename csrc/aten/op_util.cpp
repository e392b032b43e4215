#include "aten/op_util.h"

namespace loom::aten {

at::Tensor to_meta(const at::Tensor& t) {
  if (!t.defined()) return t;
  at::Tensor m = at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
  if (t.unsafeGetTensorImpl()->is_wrapped_number())
    m.unsafeGetTensorImpl()->set_wrapped_number(true);
  return m;
}

c10::optional<at::Tensor> to_meta(const c10::optional<at::Tensor>& t) {
  if (!t.has_value()) return t;
  return to_meta(*t);
}

NodeRef scalar_node(const c10::Scalar& s, const Shape& shape, DType dtype) {
  Scalar v = s.isFloatingPoint() ? Scalar::of_float(s.toDouble())
             : s.isBoolean()     ? Scalar::of_int(s.toBool())
                                 : Scalar::of_int(s.toLong());
  return constant(v, dtype, shape);
}

NodeRef operand(const at::Tensor& t, const Shape& shape, DType dtype) {
  if (!is_loom(t)) {
    TORCH_CHECK(t.dim() == 0, "Expected all tensors to be on the same device, but found a ",
                t.device(), " tensor of ", t.dim(), " dims with a Loom tensor");
    return scalar_node(t.item(), shape, dtype);
  }
  return cast(expand(read_tensor(t), shape), dtype);
}

at::Tensor result_like(const at::Tensor& meta) {
  return empty_loom(meta.sizes(), meta.strides(), meta.scalar_type());
}

void match_out(at::Tensor& out, const at::Tensor& meta_out) {
  if (out.sizes() != meta_out.sizes()) out.resize_(meta_out.sizes());
  if (out.strides() != meta_out.strides() && out.numel() == meta_out.numel())
    out.as_strided_(meta_out.sizes(), meta_out.strides());
}

void assign(const at::Tensor& dst, const NodeRef& value) {
  write_tensor(dst, cast(value, to_loom(dst.scalar_type())));
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
