// max_unpool2d / max_unpool3d: zeros, and each input element stored at its index within its
// (batch, channel) plane of the output: a scatter in input order (a repeated index keeps
// the last value, as the CPU's loop does). An index outside the plane faults with the
// CPU's message, at the op when the indices are known (check_now), else at realization.
// The gradient is composite (a gather of the output gradient at the indices).
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::IntArrayRef;
using at::Tensor;

void check_nonempty_planes(const Tensor& self, const char* fn) {
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, fn,
                ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
}

// Whether a plane position p lies at p * (stride of the last dim) in `out`: its spatial
// dims nest densely (as in a contiguous or channels-last tensor).
bool dense_planes(const Tensor& out, int spatial) {
  int64_t expected = out.stride(out.dim() - 1);
  for (int64_t k = out.dim() - 2; k >= out.dim() - spatial; --k) {
    expected *= out.size(k + 1);
    if (out.size(k) > 1 && out.stride(k) != expected) return false;
  }
  return true;
}

// Scatters self into `out` (zeroed) at the plane positions in `indices`; `spatial` is the
// number of output spatial dims.
void unpool_into(const Tensor& self, const Tensor& indices, Tensor& out, int spatial,
                 const std::string& message) {
  if (out.numel() == 0 || self.numel() == 0) return;
  if (!dense_planes(out, spatial)) {  // an out= tensor of another layout
    Tensor dense = at::zeros(out.sizes(), out.options());
    unpool_into(self, indices, dense, spatial, message);
    out.copy_(dense);
    return;
  }
  const int64_t batch_dims = self.dim() - spatial;  // (N, C) or (C)
  int64_t plane = 1;
  for (int k = 0; k < spatial; ++k) plane *= out.size(batch_dims + k);
  check_now(indices, plane, false, false, message);
  EngineLock g(engine_mutex());
  const Shape s = shape_of(self.sizes());
  const DType t = to_loom(out.scalar_type());
  NodeRef at = checked(cast(read_tensor(indices), DType::Int64), plane, false, false, message);
  at = binary(Op::Mul, at, int_const(out.stride(out.dim() - 1), s));
  for (int64_t d = 0; d < batch_dims; ++d)
    at = binary(Op::Add, at,
                binary(Op::Mul, iota(DType::Int64, s, int(d)), int_const(out.stride(d), s)));
  at = binary(Op::Add, at, int_const(out.storage_offset(), s));
  scatter(buffer_of(out), t, at, cast(read_tensor(self), t), std::nullopt);
}

Tensor& unpool2d_out(const Tensor& self, const Tensor& indices, IntArrayRef output_size,
                     Tensor& out) {
  // Duplicate indices leave one of their values, which one unspecified.
  at::globalContext().alertNotDeterministic("max_unpooling2d_forward_out");
  check_operands("max_unpool2d", {self, indices, out});
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(output_size.size() == 2,
              "There should be exactly two elements (height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4,
              "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(),
              "Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  check_nonempty_planes(self, "max_unpooling2d_forward_out_cpu()");
  static const CpuVerdicts verdicts;  // the dtypes the running torch's CPU unpools
  verdicts.check(self.scalar_type(), [&] {
    at::max_unpool2d(probe_operand(self.scalar_type(), {1, 1, 1}),
                     at::zeros({1, 1, 1}, at::kLong), {1, 1});
  });
  const int64_t oh = output_size[0], ow = output_size[1];
  const auto format = self.suggest_memory_format();
  if (self.dim() == 3)
    at::native::resize_output(out, {self.size(0), oh, ow});
  else
    at::native::resize_output(out, {self.size(0), self.size(1), oh, ow});
  // The output's layout follows the input's (dense spatial dims, which unpool_into needs).
  if (self.dim() == 4 && !out.is_contiguous(format)) out.resize_(out.sizes(), format);
  out.zero_();
  const std::string message = "Found an invalid max index: {} (output volumes are of size " +
                              std::to_string(oh) + "x" + std::to_string(ow) +
                              (format == at::MemoryFormat::ChannelsLast ? ")" : "");
  unpool_into(self, indices, out, 2, message);
  return out;
}

Tensor unpool2d(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return unpool2d_out(self, indices, output_size, out);
}

Tensor& unpool3d_out(const Tensor& self, const Tensor& indices, IntArrayRef output_size,
                     IntArrayRef stride, IntArrayRef padding, Tensor& out) {
  // Duplicate indices leave one of their values, which one unspecified.
  at::globalContext().alertNotDeterministic("max_unpooling3d_forward_out");
  check_operands("max_unpool3d", {self, indices, out});
  TORCH_CHECK(out.is_contiguous(), "output must be contiguous");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5,
              "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  TORCH_CHECK(
      output_size.size() == 3,
      "There should be exactly three elements (depth, height, width) in output_size, but got ",
      output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, width) in padding, but got: ",
              padding.size(), " elements.");
  TORCH_CHECK(self.sizes() == indices.sizes(),
              "Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  check_nonempty_planes(self, "max_unpooling3d_forward_out_cpu()");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
  static const CpuVerdicts verdicts;  // the dtypes the running torch's CPU unpools
  verdicts.check(self.scalar_type(), [&] {
    at::max_unpool3d(probe_operand(self.scalar_type(), {1, 1, 1, 1}),
                     at::zeros({1, 1, 1, 1}, at::kLong), {1, 1, 1}, {1, 1, 1}, {0, 0, 0});
  });
  const int64_t ot = output_size[0], oh = output_size[1], ow = output_size[2];
  if (self.dim() == 5)
    at::native::resize_output(out, {self.size(0), self.size(1), ot, oh, ow});
  else
    at::native::resize_output(out, {self.size(0), ot, oh, ow});
  out.zero_();
  const std::string message = "Found an invalid max index: {} (output volumes are of size " +
                              std::to_string(ot) + "x" + std::to_string(oh) + "x" +
                              std::to_string(ow);
  unpool_into(self, indices, out, 3, message);
  return out;
}

Tensor unpool3d(const Tensor& self, const Tensor& indices, IntArrayRef output_size,
                IntArrayRef stride, IntArrayRef padding) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return unpool3d_out(self, indices, output_size, stride, padding, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_unpool2d", unpool2d);
  m.impl("max_unpool2d.out", unpool2d_out);
  m.impl("max_unpool3d", unpool3d);
  m.impl("max_unpool3d.out", unpool3d_out);
}

}  // namespace loom::aten
