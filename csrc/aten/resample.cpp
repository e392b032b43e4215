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

NodeRef drop_windows(const NodeRef& reduced, int k) {
  IndexMap m;
  m.offs.assign(size_t(2 + 2 * k), 0);
  Shape s(reduced->shape.begin(), reduced->shape.begin() + 2 + k);
  for (int i = 0; i < 2 + k; ++i) {
    m.dim_of.push_back(i);
    m.mult.push_back(1);
  }
  return reindex(reduced, s, m);
}

at::Tensor max_pool_backward_at(const char* op, const at::Tensor& grad_out, const at::Tensor& self,
                                const at::Tensor& indices, int k, bool channels_last) {
  auto batched = [k](const at::Tensor& t) { return t.dim() == k + 1 ? t.unsqueeze(0) : t; };
  at::Tensor x = batched(self), g = batched(grad_out), ix = batched(indices);
  // Channels-last: the scatter runs over (N, O..., C) with the channels innermost, reading
  // the gradient and indices in their memory order and adding at distinct, adjacent
  // elements of an (N, I..., C) result.
  std::vector<int64_t> order = {0};
  for (int i = 0; i < k; ++i) order.push_back(2 + i);
  order.push_back(1);
  std::vector<int64_t> sizes = x.sizes().vec();
  const int chan = channels_last ? k + 1 : 1, first = channels_last ? 1 : 2;
  if (channels_last) {
    g = g.permute(order);
    ix = ix.permute(order);
    for (size_t i = 0; i < order.size(); ++i) sizes[i] = x.size(order[i]);
  }
  EngineLock lock(engine_mutex());
  Shape gs = shape_of(g.sizes());
  int64_t plane = 1;
  for (int i = 0; i < k; ++i) plane *= sizes[size_t(first + i)];
  std::vector<NodeRef> coord(size_t(k + 2));
  coord[0] = iota(DType::Int64, gs, 0);
  coord[size_t(chan)] = iota(DType::Int64, gs, chan);
  if (g.numel() > 0) {
    NodeRef flat = checked(
        read_tensor(ix), plane, false, false,
        std::string(op) + ": index {} is out of bounds for a plane of " + std::to_string(plane));
    int64_t inner = plane;
    for (int i = 0; i < k; ++i) {
      const int64_t size = sizes[size_t(first + i)];
      inner /= size;
      coord[size_t(first + i)] = binary(
          Op::Remainder, binary(Op::FloorDiv, flat, int_const(inner, gs)), int_const(size, gs));
    }
  }
  at::Tensor grad = scatter_add_into(sizes, grad_out.scalar_type(), g, coord);
  if (channels_last) {
    std::vector<int64_t> back(order.size());
    for (size_t i = 0; i < order.size(); ++i) back[size_t(order[i])] = int64_t(i);
    grad = grad.permute(back);
  }
  return self.dim() == k + 1 ? grad.squeeze(0) : grad;
}

}  // namespace loom::aten
