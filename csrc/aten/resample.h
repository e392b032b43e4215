// Gathers and accumulating scatters at per-dim coordinates: the building blocks of ops that
// move elements by index arithmetic (padding, interpolation, pooling with computed windows).
#pragma once

#include <ATen/ATen.h>

#include "aten/op_util.h"

namespace loom::aten {

// Raises the CPU's error when its kernel (named `kernel` in PyTorch's dispatch macro) has
// no version for dtype t: `"kernel" not implemented for 'Half'`.
void check_dtype(const char* kernel, c10::ScalarType t,
                 std::initializer_list<c10::ScalarType> supported);

// The elements of `src` at per-dim coordinates (Int64 nodes of one shape, each in range by
// construction): a fused gather.
NodeRef gather_at(const at::Tensor& src, const std::vector<NodeRef>& coord);

// A new contiguous tensor of `sizes` and `dtype`, zero but for value[i] added at coord[i]
// for every element of the coordinates' shape. Half and BFloat16 accumulate in float32 and
// round once. Hold the engine lock.
at::Tensor scatter_add_into(at::IntArrayRef sizes, c10::ScalarType dtype, const NodeRef& value,
                            const std::vector<NodeRef>& coord);
// The same with the value of a tensor shaped like the coordinates.
at::Tensor scatter_add_into(at::IntArrayRef sizes, c10::ScalarType dtype, const at::Tensor& value,
                            const std::vector<NodeRef>& coord);
// Accumulates `value` at coord into an existing float tensor made by zeros_for_scatter.
void scatter_add_at(const at::Tensor& dst, const NodeRef& value, const std::vector<NodeRef>& coord);
// A zero tensor to scatter_add_at into: `dtype`, or float32 for Half and BFloat16.
at::Tensor zeros_for_scatter(at::IntArrayRef sizes, c10::ScalarType dtype);
// The accumulator `acc` as a tensor of `dtype` (itself when the dtypes agree).
at::Tensor finish_scatter(const at::Tensor& acc, c10::ScalarType dtype);

// A reduction over the window dims of an (N, C, O..., J...) value (k of each, the window
// dims reduced to size 1) as a value of shape (N, C, O...).
NodeRef drop_windows(const NodeRef& reduced, int k);

// The gradient of a max pooling over the last k dims of `self` ((N,) C, I...): each element of
// grad_out added at the flat position within its plane that `indices` holds. An index outside
// the plane faults at realization, naming `op`. A new tensor shaped as self: contiguous, or
// channels-last (of its batched form) when `channels_last`.
at::Tensor max_pool_backward_at(const char* op, const at::Tensor& grad_out, const at::Tensor& self,
                                const at::Tensor& indices, int k, bool channels_last = false);

}  // namespace loom::aten
