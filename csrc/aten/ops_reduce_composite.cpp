// Reductions that PyTorch implements only per backend (no composite a new device inherits),
// built here from other aten ops: every call below dispatches back to Loom's own kernels,
// so nothing runs on the CPU. nansum, count_nonzero, equal, renorm.
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
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

// renorm: each slice along dim whose p-norm exceeds maxnorm is scaled by
// maxnorm / (norm + 1e-7), the factor computed in the norm's dtype (float for half types).
Tensor& renorm_into(const Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm,
                    Tensor& out) {
  Tensor mo = out.is_same(self) ? self.to(at::kMeta) : out.to(at::kMeta);
  at::meta::renorm_outf(self.to(at::kMeta), p, dim, maxnorm, mo);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim) dims.push_back(d);
  const auto acc = at::toAccumulateType(self.scalar_type(), /*is_cuda=*/true);
  Tensor norm = acc != self.scalar_type()
                    ? at::linalg_vector_norm(self, p.toDouble(), dims, true, acc)
                    : at::linalg_vector_norm(self, p.toDouble(), dims, true);
  Tensor factor = at::where(norm > maxnorm,
                            at::div(at::full_like(norm, maxnorm), norm + 1e-7),
                            at::ones_like(norm));
  if (acc != c10::toRealValueType(self.scalar_type())) factor = factor.to(self.scalar_type());
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  return at::mul_out(out, self, factor);
}
Tensor renorm_fn(const Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return renorm_into(self, p, dim, maxnorm, out);
}
Tensor& renorm_ip(Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm) {
  return renorm_into(self, p, dim, maxnorm, self);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nansum", nansum_fn);
  m.impl("nansum.out", nansum_out);
  m.impl("count_nonzero.dim_IntList", count_nonzero_fn);
  m.impl("equal", equal_fn);
  m.impl("renorm", renorm_fn);
  m.impl("renorm.out", renorm_into);
  m.impl("renorm_", renorm_ip);
}

}  // namespace loom::aten
