// Reductions that PyTorch implements only per backend (no composite a new device inherits),
// built here from other aten ops: every call below dispatches back to Loom's own kernels,
// so nothing runs on the CPU. nansum, count_nonzero, equal.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace loom::aten {

namespace {

using at::Tensor;

// The CPU's sum with NaNs read as zero; integer and bool inputs have none.
Tensor nan_as_zero(const Tensor& self) {
  TORCH_CHECK(!self.is_complex(), "nansum does not support complex inputs");
  if (!self.is_floating_point()) return self;
  return at::where(at::isnan(self), at::zeros({}, self.options()), self);
}

Tensor nansum_fn(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                 c10::optional<at::ScalarType> dtype) {
  return at::sum(nan_as_zero(self), dim, keepdim, dtype);
}

Tensor& nansum_out(const Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   c10::optional<at::ScalarType> dtype, Tensor& out) {
  return at::sum_out(out, nan_as_zero(self), dim, keepdim, dtype);
}

Tensor count_nonzero_fn(const Tensor& self, at::IntArrayRef dims) {
  return at::sum(at::ne(self, 0), dims, /*keepdim=*/false, at::kLong);
}

// A Python bool: the comparison is realized here, as any value leaving the graph is. Like
// the CPU's, it compares values of different dtypes after promotion.
bool equal_fn(const Tensor& self, const Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. ",
              "Got: ", self.device(), " and ", other.device());
  if (!self.sizes().equals(other.sizes())) return false;
  return at::eq(self, other).all().item<bool>();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nansum", nansum_fn);
  m.impl("nansum.out", nansum_out);
  m.impl("count_nonzero.dim_IntList", count_nonzero_fn);
  m.impl("equal", equal_fn);
}

}  // namespace loom::aten
