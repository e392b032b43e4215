// Gathers and accumulating scatters at per-dim coordinates (resample.h).
#include "aten/resample.h"

namespace loom::aten {

void check_dtype(const char* kernel, c10::ScalarType t,
                 std::initializer_list<c10::ScalarType> supported) {
  for (c10::ScalarType s : supported)
    if (s == t) return;
  TORCH_CHECK(false, '"', kernel, "\" not implemented for '", c10::toString(t), "'");
}

NodeRef gather_at(const at::Tensor& src, const std::vector<NodeRef>& coord) {
  return gather(buffer_of(src), to_loom(src.scalar_type()), storage_index(src, coord));
}

at::Tensor zeros_for_scatter(at::IntArrayRef sizes, c10::ScalarType dtype) {
  DType t = to_loom(dtype);
  at::Tensor acc = empty_loom(sizes, is_reduced_float(t) ? at::kFloat : dtype);
  assign(acc, constant(Scalar::of_int(0), to_loom(acc.scalar_type()), shape_of(sizes)));
  return acc;
}

void scatter_add_at(const at::Tensor& dst, const NodeRef& value,
                    const std::vector<NodeRef>& coord) {
  DType t = to_loom(dst.scalar_type());
  scatter(buffer_of(dst), t, storage_index(dst, coord), cast(value, t), ReduceKind::Sum);
}

at::Tensor finish_scatter(const at::Tensor& acc, c10::ScalarType dtype) {
  if (acc.scalar_type() == dtype) return acc;
  at::Tensor out = empty_loom(acc.sizes(), dtype);
  assign(out, read_tensor(acc));
  return out;
}

at::Tensor scatter_add_into(at::IntArrayRef sizes, c10::ScalarType dtype, const NodeRef& value,
                            const std::vector<NodeRef>& coord) {
  at::Tensor acc = zeros_for_scatter(sizes, dtype);
  if (numel(value->shape) > 0) scatter_add_at(acc, value, coord);
  return finish_scatter(acc, dtype);
}

at::Tensor scatter_add_into(at::IntArrayRef sizes, c10::ScalarType dtype, const at::Tensor& value,
                            const std::vector<NodeRef>& coord) {
  at::Tensor acc = zeros_for_scatter(sizes, dtype);
  if (value.numel() > 0) scatter_add_at(acc, read_tensor(value), coord);
  return finish_scatter(acc, dtype);
}

}  // namespace loom::aten
