// masked_fill_ and masked_select: an elementwise select over the mask, and the elements it
// selects (through Loom's index kernel), with the CPU's checks and warnings.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <functional>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;
using IndexList = c10::List<c10::optional<Tensor>>;

// The CPU kernel's checks of the mask, before the meta function's (2.x's, a Python one,
// words a bad shape its own way). Whether self is expanded (it warns once).
bool masked_fill_checks(const Tensor& self, const Tensor& mask) {
  mask_dtype_as_cpu(mask, [](const Tensor& m) { at::zeros({1}).masked_fill_(m, 0); });
  const bool expanded = warn_if_expanded(self, "masked_fill_", "tensor[mask] = scalar");
  at::assert_no_partial_overlap(self, mask);
  // The CPU's iterator checks that the mask broadcasts to self, with these messages.
  std::vector<int64_t> broadcast = at::infer_size(self.sizes(), mask.sizes());
  TORCH_CHECK(c10::IntArrayRef(broadcast) == self.sizes(), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", c10::IntArrayRef(broadcast));
  return expanded;
}

// `value(shape)` fills the elements the mask selects. Through an expanded self only those
// are written (the positions the mask selects, read on the host): an element that several
// positions share takes the value when any of them is selected, as the CPU's loop leaves
// the others alone.
Tensor& masked_fill_value(Tensor& self, const Tensor& mask, bool expanded,
                          const std::function<NodeRef(const Shape&)>& value) {
  DType dtype = to_loom(self.scalar_type());
  if (expanded) {
    Tensor at_ = at::nonzero(mask.expand(self.sizes()));  // {n, dims}
    if (at_.size(0) == 0) return self;
    EngineLock g(engine_mutex());
    std::vector<NodeRef> coord;
    for (int64_t d = 0; d < self.dim(); ++d) coord.push_back(read_tensor(at_.select(1, d)));
    scatter(buffer_of(self), dtype, storage_index(self, coord),
            cast(value({at_.size(0)}), dtype), std::nullopt);
    return self;
  }
  Shape shape = shape_of(self.sizes());
  EngineLock g(engine_mutex());
  NodeRef m = cast(expand(read_tensor(mask), shape), DType::Bool);
  write_tensor(self, where(m, cast(value(shape), dtype), read_tensor(self)));
  return self;
}

Tensor& masked_fill_scalar(Tensor& self, const Tensor& mask, const c10::Scalar& value) {
  check_operands("masked_fill_", {self, mask});
  const bool expanded = masked_fill_checks(self, mask);
  to_meta(self).masked_fill_(to_meta(mask), value);
  check_scalar_fits(value, self.scalar_type());
  return masked_fill_value(self, mask, expanded, [&](const Shape& shape) {
    return scalar_node(value, shape, to_loom(self.scalar_type()));
  });
}

Tensor& masked_fill_tensor(Tensor& self, const Tensor& mask, const Tensor& value) {
  check_operands("masked_fill_", {self, mask});
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (!is_loom(value) || (value.is_complex() && !self.is_complex()))
    return masked_fill_scalar(self, mask, value.item());
  const bool expanded = masked_fill_checks(self, mask);
  to_meta(self).masked_fill_(to_meta(mask), to_meta(value));
  return masked_fill_value(self, mask, expanded, [&](const Shape& shape) {
    return operand(value, shape, to_loom(self.scalar_type()));
  });
}

Tensor masked_select_fn(const Tensor& self, const Tensor& mask) {
  check_operands("masked_select", {self, mask});
  mask_dtype_as_cpu(mask, [](const Tensor& m) { at::masked_select(at::zeros({1}), m); });
  TORCH_CHECK(mask.scalar_type() == at::kBool || mask.scalar_type() == at::kByte,
              "masked_select: expected BoolTensor or ByteTensor for mask");
  auto shape = at::infer_size_dimvector(self.sizes(), mask.sizes());
  Tensor s = self.expand(shape), m = mask.to(at::kBool).expand(shape);
  if (shape.empty()) {
    s = s.reshape({1});
    m = m.reshape({1});
  }
  IndexList l;
  l.push_back(c10::optional<Tensor>(m));
  return at::index(s, l);  // Loom's index kernel, through the dispatcher
}

Tensor& masked_select_out(const Tensor& self, const Tensor& mask, Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  Tensor r = masked_select_fn(self, mask);
  at::native::resize_output(out, r.sizes());
  assign(out, read_tensor(r));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_scalar));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor));
  m.impl("masked_select", TORCH_FN(masked_select_fn));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
}

}  // namespace loom::aten
