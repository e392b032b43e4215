// 2-d pooling forward and backward: max (with indices), average, adaptive average.
// Windows are a strided view of the padded input (as in ops_conv.cpp), reduced by the
// engine; gradients go back elementwise where max-pool windows do not overlap, else with
// accumulating scatters split by planes (at the max's indices, or the average pool's at
// each window element's coordinates). Adaptive average pooling is two small
// averaging-matrix products.
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>
#include <limits>

#include "aten/op_util.h"
#include "aten/resample.h"

namespace loom::aten {

namespace {

using at::IntArrayRef;
using at::Tensor;

int64_t at2(IntArrayRef v, int i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[size_t(i)];
}

struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, h, w;
};

Window window(const Tensor& in4, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, const Tensor& out_meta) {
  Window g;
  g.kh = at2(kernel, 0, 1), g.kw = at2(kernel, 1, 1);
  g.sh = at2(stride, 0, g.kh), g.sw = at2(stride, 1, g.kw);
  g.ph = at2(padding, 0, 0), g.pw = at2(padding, 1, 0);
  g.dh = at2(dilation, 0, 1), g.dw = at2(dilation, 1, 1);
  g.h = in4.size(2), g.w = in4.size(3);
  g.oh = out_meta.size(-2), g.ow = out_meta.size(-1);
  return g;
}

Tensor as_4d(const Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

// The input padded by (ph, pw) and, for ceil_mode windows, enough more on the bottom and
// right to hold every window; then the (N, C, OH, OW, KH, KW) view of its windows.
Tensor windows(const Tensor& in4, const Window& g, double fill) {
  int64_t need_h = (g.oh - 1) * g.sh + g.dh * (g.kh - 1) + 1, need_w = (g.ow - 1) * g.sw + g.dw * (g.kw - 1) + 1;
  int64_t extra_h = std::max<int64_t>(0, need_h - (g.h + 2 * g.ph));
  int64_t extra_w = std::max<int64_t>(0, need_w - (g.w + 2 * g.pw));
  // The padding is fused into the windows' reads as a gather with clamped coordinates (NOTE
  // [Constant padding]), except where windows overlap by more than half in an NCHW input:
  // each element is then read about kh * kw / (sh * sw) times, and gathering each read
  // cost more than a padded copy read by strided loads (3x3 windows at stride 1 of
  // 16x64x32x32: 0.80-0.90 ms fused, 0.54-0.57 stored; at stride 2, and channels-last at
  // any stride, fused wins: 0.29-0.32 against 0.48, channels-last 0.20-0.34 against 1.1-1.6).
  const bool pads = g.ph > 0 || g.pw > 0 || extra_h > 0 || extra_w > 0;
  const bool dense = 2 * g.sh <= g.kh && 2 * g.sw <= g.kw && in4.is_contiguous();
  Tensor p;
  if (pads && dense) {
    p = at::full({in4.size(0), in4.size(1), g.h + 2 * g.ph + extra_h, g.w + 2 * g.pw + extra_w}, fill,
                 in4.options());
    p.narrow(2, g.ph, g.h).narrow(3, g.pw, g.w).copy_(in4);
  } else {
    p = at::constant_pad_nd(in4, {g.pw, g.pw + extra_w, g.ph, g.ph + extra_h}, fill).contiguous();
  }
  return p.as_strided({p.size(0), p.size(1), g.oh, g.ow, g.kh, g.kw},
                      {p.stride(0), p.stride(1), g.sh * p.stride(2), g.sw * p.stride(3),
                       g.dh * p.stride(2), g.dw * p.stride(3)},
                      p.storage_offset());
}

IndexMap drop_window_dims(size_t rank6) {
  IndexMap m;
  m.offs.assign(rank6, 0);
  for (int j = 0; j < 4; ++j) {
    m.dim_of.push_back(j);
    m.mult.push_back(1);
  }
  return m;
}

// Each window's gradient `per` (N, C, OH, OW) added at each of its elements' positions
// in the input, in a new tensor of the input's sizes: an element in the padding adds 0
// at a clamped position. The scatter's images write disjoint planes, so it splits across
// threads (NOTE [Parallel scatters]); for a channels-last input it runs with the channels
// innermost, where its rows' elements are distinct and adjacent, and the result is
// channels-last.
Tensor scatter_windows(const Tensor& per, const Window& g, bool channels_last) {
  const int64_t n = per.size(0), c = per.size(1);
  // The scatter's dims: the image, the output position and the window element, with the
  // channel second (NCHW) or last (channels-last).
  const int ch = channels_last ? 5 : 1, oh = channels_last ? 1 : 2, kh = oh + 2;
  Tensor value = channels_last ? per.permute({0, 2, 3, 1}).unsqueeze(3).unsqueeze(3)
                               : per.unsqueeze(-1).unsqueeze(-1);
  std::vector<int64_t> sizes6 = channels_last
                                    ? std::vector<int64_t>{n, g.oh, g.ow, g.kh, g.kw, c}
                                    : std::vector<int64_t>{n, c, g.oh, g.ow, g.kh, g.kw};
  EngineLock lock(engine_mutex());
  Shape s6 = shape_of(sizes6);
  NodeRef inside;
  auto coord = [&](int out_dim, int64_t stride, int64_t pad, int k_dim, int64_t dilation, int64_t size) {
    NodeRef i = binary(Op::Add, binary(Op::Mul, iota(DType::Int64, s6, out_dim), int_const(stride, s6)),
                       binary(Op::Mul, iota(DType::Int64, s6, k_dim), int_const(dilation, s6)));
    i = binary(Op::Sub, i, int_const(pad, s6));
    NodeRef in = binary(Op::LogicalAnd, binary(Op::Ge, i, int_const(0, s6)),
                        binary(Op::Lt, i, int_const(size, s6)));
    inside = inside ? binary(Op::LogicalAnd, inside, in) : in;
    return binary(Op::Minimum, binary(Op::Maximum, i, int_const(0, s6)), int_const(size - 1, s6));
  };
  NodeRef h = coord(oh, g.sh, g.ph, kh, g.dh, g.h), w = coord(oh + 1, g.sw, g.pw, kh + 1, g.dw, g.w);
  NodeRef img = iota(DType::Int64, s6, 0), chan = iota(DType::Int64, s6, ch);
  NodeRef v = read_tensor(value.expand(sizes6));
  v = where(inside, v, scalar(0, v->dtype, s6));
  if (channels_last)
    return scatter_add_into({n, g.h, g.w, c}, per.scalar_type(), v, {img, h, w, chan})
        .permute({0, 3, 1, 2});
  return scatter_add_into({n, c, g.h, g.w}, per.scalar_type(), v, {img, chan, h, w});
}

// --- max pool ---

std::tuple<Tensor, Tensor> max_pool(const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_operands("max_pool2d_with_indices", {self});
  auto meta = at::meta::max_pool2d_with_indices(to_meta(self), kernel, stride, padding, dilation,
                                                ceil_mode);
  static const CpuVerdicts verdicts;  // 2.x's CPU takes integers too
  verdicts.check(self.scalar_type(), [&] {
    at::max_pool2d_with_indices(probe_operand(self.scalar_type(), {1, 1, 1}), {1});
  });
  Tensor out = result_like(std::get<0>(meta)), idx = result_like(std::get<1>(meta));
  if (out.numel() == 0) return {out, idx};
  Tensor in4 = as_4d(self);
  Window g = window(in4, kernel, stride, padding, dilation, std::get<0>(meta));
  Tensor win = windows(in4, g, lowest_value(self.scalar_type()));
  EngineLock lock(engine_mutex());
  NodeRef v = read_tensor(win);
  Shape s4 = {in4.size(0), in4.size(1), g.oh, g.ow};
  DType t = to_loom(self.scalar_type());
  const Shape s6 = v->shape;
  NodeRef m6 = reduce(ReduceKind::Max, v, {4, 5}, t);
  NodeRef m = reindex(m6, s4, drop_window_dims(6));
  // Each window element's input coordinates, whether it is inside the input, and its flat
  // index in the plane.
  auto at = [&](int out_axis, int64_t stride, int k_axis, int64_t dilation, int64_t pad) {
    return binary(Op::Sub,
                  binary(Op::Add, binary(Op::Mul, iota(DType::Int64, s6, out_axis), int_const(stride, s6)),
                         binary(Op::Mul, iota(DType::Int64, s6, k_axis), int_const(dilation, s6))),
                  int_const(pad, s6));
  };
  NodeRef h = at(2, g.sh, 4, g.dh, g.ph), w = at(3, g.sw, 5, g.dw, g.pw);
  auto within = [&](const NodeRef& c, int64_t size) {
    return binary(Op::LogicalAnd, binary(Op::Ge, c, int_const(0, s6)), binary(Op::Lt, c, int_const(size, s6)));
  };
  NodeRef valid = binary(Op::LogicalAnd, within(h, g.h), within(w, g.w));
  NodeRef flat6 = binary(Op::Add, binary(Op::Mul, h, int_const(g.w, s6)), w);
  NodeRef flat = pooling_index(v, valid, flat6, m6, {4, 5}, g.h * g.w, [&](const NodeRef& x) {
    return reindex(x, s4, drop_window_dims(6));
  });
  make_cohort({m, flat});  // the backward reads the indices (NOTE [Cohorts])
  assign(as_4d(out), m);
  assign(as_4d(idx), flat);
  return {out, idx};
}

// NOTE [Max-pool gradient without a scatter]: when windows do not overlap (stride at
// least the dilated window), every input element lies in at most one window's tile of
// (stride x stride) positions, so its gradient is a plain elementwise value: the window's
// output gradient where the window's argmax index names this element, else zero. That is
// one parallel kernel instead of an accumulating put_, which runs in order on one thread.
// Tiles cover the padded input from its top-left corner; rows and columns past the last
// tile (or in the padding) get zeros, from the zero fill below the store.
Tensor disjoint_windows_grad(const Tensor& g4, const Tensor& i4, const Tensor& in4, const Window& g) {
  const int64_t n = in4.size(0), c = in4.size(1);
  const int64_t th = g.oh * g.sh, tw = g.ow * g.sw;
  Tensor padded = at::zeros({n, c, std::max(th, g.ph + g.h), std::max(tw, g.pw + g.w)}, g4.options());
  Tensor tiles = padded.narrow(2, 0, th).narrow(3, 0, tw).view({n, c, g.oh, g.sh, g.ow, g.sw});
  {
    EngineLock lock(engine_mutex());
    const DType t = to_loom(g4.scalar_type());
    const Shape s = shape_of(tiles.sizes());
    IndexMap per_window{{0, 0, 0, 0}, {0, 1, 2, -1, 3, -1}, {1, 1, 1, 0, 1, 0}};
    auto coord = [&](int outer_axis, int64_t step, int64_t pad) {
      return binary(Op::Sub, binary(Op::Add, binary(Op::Mul, iota(DType::Int64, s, outer_axis), int_const(step, s)),
                                    iota(DType::Int64, s, outer_axis + 1)),
                    int_const(pad, s));
    };
    NodeRef y = coord(2, g.sh, g.ph), x = coord(4, g.sw, g.pw);
    auto within = [&](const NodeRef& v, int64_t size) {
      return binary(Op::LogicalAnd, binary(Op::Ge, v, int_const(0, s)), binary(Op::Lt, v, int_const(size, s)));
    };
    NodeRef pos = binary(Op::Add, binary(Op::Mul, y, int_const(g.w, s)), x);
    NodeRef idx = reindex(cast(read_tensor(i4), DType::Int64), s, per_window);
    NodeRef hit = binary(Op::LogicalAnd, binary(Op::LogicalAnd, within(y, g.h), within(x, g.w)),
                         binary(Op::Eq, pos, idx));
    NodeRef val = reindex(read_tensor(g4), s, per_window);
    assign(tiles, where(hit, val, constant(Scalar::of_int(0), t, s)));
  }
  return padded.narrow(2, g.ph, g.h).narrow(3, g.pw, g.w).contiguous();
}

Tensor max_pool_backward(const Tensor& grad_out, const Tensor& self, IntArrayRef kernel,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                         bool ceil_mode, const Tensor& indices) {
  check_operands("max_pool2d_with_indices_backward", {grad_out, self, indices});
  Tensor meta =
      at::meta::max_pool2d_with_indices_backward(to_meta(grad_out), to_meta(self), kernel, stride,
                                                 padding, dilation, ceil_mode, to_meta(indices));
  // The gradient takes the layout the meta call gives it (the input's memory format).
  Tensor out = result_like(meta), out4 = as_4d(out);
  Tensor in4 = as_4d(self), g4 = as_4d(grad_out), i4 = as_4d(indices);
  Window g = window(in4, kernel, stride, padding, dilation, g4);
  if (g4.numel() > 0 && g.sh > g.dh * (g.kh - 1) && g.sw > g.dw * (g.kw - 1)) {
    out4.copy_(disjoint_windows_grad(g4, i4, in4, g));
    return out;
  }
  // Overlapping windows: each window's gradient added at its argmax, split across threads
  // by images and channels (the indices stay within their plane).
  const bool channels_last = self.dim() == 4 && meta.is_contiguous(at::MemoryFormat::ChannelsLast) &&
                             !meta.is_contiguous();
  Tensor grad = max_pool_backward_at("max_pool2d_with_indices_backward", grad_out, self, indices, 2,
                                     channels_last);
  if (grad.strides() == meta.strides()) return grad;
  out.copy_(grad);
  return out;
}

// --- average pool ---

// The divisor of each output position, as PyTorch's CPU kernel computes it.
Tensor avg_divisors(const Window& g, bool count_include_pad, c10::optional<int64_t> divisor_override,
                    const at::TensorOptions& options) {
  std::vector<double> d(size_t(g.oh * g.ow));
  for (int64_t i = 0; i < g.oh; ++i)
    for (int64_t j = 0; j < g.ow; ++j) {
      int64_t hs = i * g.sh - g.ph, ws = j * g.sw - g.pw;
      int64_t he = std::min(hs + g.kh, g.h + g.ph), we = std::min(ws + g.kw, g.w + g.pw);
      int64_t pool = (he - hs) * (we - ws);
      hs = std::max<int64_t>(hs, 0), ws = std::max<int64_t>(ws, 0);
      he = std::min(he, g.h), we = std::min(we, g.w);
      d[size_t(i * g.ow + j)] = divisor_override ? double(*divisor_override)
                                : count_include_pad ? double(pool)
                                                    : double((he - hs) * (we - ws));
    }
  return at::tensor(d, at::TensorOptions().dtype(at::kDouble)).view({g.oh, g.ow}).to(options);
}

Tensor avg_pool(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                bool ceil_mode, bool count_include_pad, c10::optional<int64_t> divisor_override) {
  check_operands("avg_pool2d", {self});
  Tensor meta = at::meta::avg_pool2d(to_meta(self), kernel, stride, padding, ceil_mode,
                                     count_include_pad, divisor_override);
  static const CpuVerdicts verdicts;  // the dtypes the running torch's CPU averages
  verdicts.check(self.scalar_type(), [&] {
    at::avg_pool2d(probe_operand(self.scalar_type(), {1, 1, 1}), {1});
  });
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  Tensor in4 = as_4d(self);
  Window g = window(in4, kernel, stride, padding, {}, meta);
  Tensor win = windows(in4, g, 0.0);
  Tensor div = avg_divisors(g, count_include_pad, divisor_override, self.options());
  EngineLock lock(engine_mutex());
  DType t = to_loom(self.scalar_type()), acc = is_reduced_float(t) ? DType::Float32 : t;
  Shape s4 = {in4.size(0), in4.size(1), g.oh, g.ow};
  NodeRef sum = reindex(reduce(ReduceKind::Sum, cast(read_tensor(win), acc), {4, 5}, acc), s4, drop_window_dims(6));
  assign(as_4d(out), cast(binary(Op::Div, sum, cast(expand(read_tensor(div), s4), acc)), t));
  return out;
}

Tensor avg_pool_backward(const Tensor& grad_out, const Tensor& self, IntArrayRef kernel,
                         IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                         bool count_include_pad, c10::optional<int64_t> divisor_override) {
  check_operands("avg_pool2d_backward", {grad_out, self});
  Tensor meta_out = at::meta::avg_pool2d(to_meta(self), kernel, stride, padding, ceil_mode,
                                         count_include_pad, divisor_override);
  Tensor in4 = as_4d(self), g4 = as_4d(grad_out);
  Window g = window(in4, kernel, stride, padding, {}, meta_out);
  // In grad_out's layout, which the scatter reads.
  Tensor per = at::empty_like(g4);
  at::div_out(per, g4, avg_divisors(g, count_include_pad, divisor_override, grad_out.options()));
  // The gradient takes the layout of the meta call (the input's memory format).
  Tensor meta =
      at::meta::avg_pool2d_backward(to_meta(grad_out), to_meta(self), kernel, stride, padding,
                                    ceil_mode, count_include_pad, divisor_override);
  const bool channels_last = self.dim() == 4 && meta.is_contiguous(at::MemoryFormat::ChannelsLast) &&
                             !meta.is_contiguous();
  Tensor grad = per.numel() == 0 ? at::zeros_like(in4, at::MemoryFormat::Contiguous)
                                 : scatter_windows(per, g, channels_last);
  if (self.dim() == 3) grad = grad.squeeze(0);
  if (grad.strides() == meta.strides()) return grad;
  Tensor out = result_like(meta);
  out.copy_(grad);
  return out;
}

// --- adaptive average pool: out = A_h @ x @ A_w^T ---

Tensor averaging_matrix(int64_t out, int64_t in, const at::TensorOptions& options) {
  std::vector<double> a(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    for (int64_t i = start; i < end; ++i) a[size_t(o * in + i)] = 1.0 / double(end - start);
  }
  return at::tensor(a, at::TensorOptions().dtype(at::kDouble)).view({out, in}).to(options);
}

Tensor adaptive_avg_pool(const Tensor& self, c10::SymIntArrayRef output_size) {
  check_operands("adaptive_avg_pool2d", {self});
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ", self.sizes());
  // The dtypes the running torch's CPU averages (integers would average with matrices of
  // zeros here).
  static const CpuVerdicts verdicts;
  verdicts.check(self.scalar_type(), [&] {
    at::_adaptive_avg_pool2d(probe_operand(self.scalar_type(), {1, 1, 1}), {1, 1});
  });
  int64_t oh = output_size[0].expect_int(), ow = output_size[1].expect_int();
  Tensor ah = averaging_matrix(oh, self.size(-2), self.options());
  Tensor aw = averaging_matrix(ow, self.size(-1), self.options());
  return at::matmul(at::matmul(ah, self), aw.t()).contiguous();
}

Tensor adaptive_avg_pool_backward(const Tensor& grad_out, const Tensor& self) {
  check_operands("adaptive_avg_pool2d_backward", {grad_out, self});
  Tensor ah = averaging_matrix(grad_out.size(-2), self.size(-2), self.options());
  Tensor aw = averaging_matrix(grad_out.size(-1), self.size(-1), self.options());
  return at::matmul(at::matmul(ah.t(), grad_out), aw).contiguous();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool_backward));
  m.impl("avg_pool2d", TORCH_FN(avg_pool));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool_backward));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool_backward));
}

}  // namespace loom::aten
