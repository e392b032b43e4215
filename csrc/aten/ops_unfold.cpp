// Sliding windows: im2col (F.unfold) reads every window of a padded input through one
// strided view; col2im (F.fold) and unfold_backward add each offset's slice back into the
// strided view it came from. Each offset is one view, so nothing overlaps within a write.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/div_rtn.h>
#include <ATen/native/im2col_shape_check.h>
#include <torch/library.h>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;

struct Window {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

Window window_of(at::IntArrayRef kernel, at::IntArrayRef dilation, at::IntArrayRef padding,
                 at::IntArrayRef stride) {
  TORCH_CHECK(kernel.size() == 2, "It is expected kernel_size equals to 2, but got size ",
              kernel.size());
  TORCH_CHECK(dilation.size() == 2, "It is expected dilation equals to 2, but got size ",
              dilation.size());
  TORCH_CHECK(padding.size() == 2, "It is expected padding equals to 2, but got size ",
              padding.size());
  TORCH_CHECK(stride.size() == 2, "It is expected stride equals to 2, but got size ",
              stride.size());
  return {kernel[0], kernel[1], dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1]};
}

// The (oh, ow) positions of kernel offset (i, j) in a padded plane: a strided view.
Tensor offset_view(const Tensor& padded, const Window& w, int64_t i, int64_t j, int64_t oh,
                   int64_t ow) {
  return padded.slice(2, i * w.dh, i * w.dh + w.sh * (oh - 1) + 1, w.sh)
      .slice(3, j * w.dw, j * w.dw + w.sw * (ow - 1) + 1, w.sw);
}

Tensor& im2col_out(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef dilation,
                   at::IntArrayRef padding, at::IntArrayRef stride, Tensor& out) {
  check_operands("im2col", {self, out});
  const Window w = window_of(kernel, dilation, padding, stride);
  at::native::im2col_shape_check(self, Tensor(), w.kh, w.kw, w.dh, w.dw, w.ph, w.pw, w.sh, w.sw);
  Tensor in = self.dim() == 3 ? self.unsqueeze(0) : self;
  const int64_t n = in.size(0), c = in.size(1);
  const int64_t oh = (in.size(2) + 2 * w.ph - (w.dh * (w.kh - 1) + 1)) / w.sh + 1;
  const int64_t ow = (in.size(3) + 2 * w.pw - (w.dw * (w.kw - 1) + 1)) / w.sw + 1;
  // Every window of the padded input as one (N, C, KH, KW, OH, OW) view: its copy is one
  // kernel, with the padding's gather fused in (NOTE [Constant padding]), where a stack of
  // one view per kernel offset was a kernel each.
  Tensor p = at::constant_pad_nd(in, {w.pw, w.pw, w.ph, w.ph}, 0);
  Tensor win = p.as_strided({n, c, w.kh, w.kw, oh, ow},
                            {p.stride(0), p.stride(1), w.dh * p.stride(2), w.dw * p.stride(3),
                             w.sh * p.stride(2), w.sw * p.stride(3)},
                            p.storage_offset());
  Tensor cols = win.reshape({n, c * w.kh * w.kw, oh * ow});
  if (self.dim() == 3) cols = cols.squeeze(0);
  at::native::resize_output(out, cols.sizes());
  out.copy_(cols);
  return out;
}
Tensor im2col_fn(const Tensor& self, at::IntArrayRef kernel, at::IntArrayRef dilation,
                 at::IntArrayRef padding, at::IntArrayRef stride) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return im2col_out(self, kernel, dilation, padding, stride, out);
}

Tensor& col2im_out(const Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel,
                   at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride,
                   Tensor& out) {
  check_operands("col2im", {self, out});
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ",
              output_size.size());
  const Window w = window_of(kernel, dilation, padding, stride);
  at::native::col2im_shape_check(self, Tensor(), output_size[0], output_size[1], w.kh, w.kw, w.dh,
                                 w.dw, w.ph, w.pw, w.sh, w.sw);
  Tensor in = self.dim() == 2 ? self.unsqueeze(0) : self;
  const int64_t n = in.size(0), c = in.size(1) / (w.kh * w.kw);
  const int64_t h = output_size[0], wd = output_size[1];
  const int64_t oh = (h + 2 * w.ph - (w.dh * (w.kh - 1) + 1)) / w.sh + 1;
  const int64_t ow = (wd + 2 * w.pw - (w.dw * (w.kw - 1) + 1)) / w.sw + 1;
  Tensor cols = in.reshape({n, c, w.kh, w.kw, oh, ow});
  // Offsets reaching past the padded plane's far edge (a stride that does not divide it)
  // get a plane large enough; the crop below drops what lies outside.
  const int64_t ph = std::max(h + 2 * w.ph, w.dh * (w.kh - 1) + w.sh * (oh - 1) + 1);
  const int64_t pw = std::max(wd + 2 * w.pw, w.dw * (w.kw - 1) + w.sw * (ow - 1) + 1);
  Tensor padded = at::zeros({n, c, ph, pw}, in.options());
  for (int64_t i = 0; i < w.kh; ++i)
    for (int64_t j = 0; j < w.kw; ++j)
      offset_view(padded, w, i, j, oh, ow).add_(cols.select(3, j).select(2, i));
  Tensor result = padded.slice(2, w.ph, w.ph + h).slice(3, w.pw, w.pw + wd);
  if (self.dim() == 2) result = result.squeeze(0);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}
Tensor col2im_fn(const Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel,
                 at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  Tensor out = empty_loom({0}, self.scalar_type());
  return col2im_out(self, output_size, kernel, dilation, padding, stride, out);
}

// The gradient of x.unfold(dim, size, step): window w's element k came from position
// w * step + k, so for each k the windows' k-th elements add into one strided view.
Tensor unfold_backward_fn(const Tensor& grad, at::IntArrayRef input_sizes, int64_t dim,
                          int64_t size, int64_t step) {
  check_operands("unfold_backward", {grad});
  dim = c10::maybe_wrap_dim(dim, int64_t(input_sizes.size()));
  Tensor out = at::zeros(input_sizes, grad.options());
  if (input_sizes.empty()) return out.add_(grad.reshape({}));
  const int64_t windows = grad.size(dim);
  if (windows == 0) return out;
  for (int64_t k = 0; k < size; ++k)
    out.narrow(dim, k, (windows - 1) * step + 1).slice(dim, 0, c10::nullopt, step).add_(grad.select(-1, k));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", im2col_fn);
  m.impl("im2col.out", im2col_out);
  m.impl("col2im", col2im_fn);
  m.impl("col2im.out", col2im_out);
  m.impl("unfold_backward", unfold_backward_fn);
}

}  // namespace loom::aten
