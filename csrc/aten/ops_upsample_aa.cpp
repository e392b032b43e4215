// Anti-aliased interpolation (_upsample_bilinear2d_aa, _upsample_bicubic2d_aa) forward and
// backward. Along each spatial dim, output coordinate o is a weighted sum of the input run
// [xmin(o), xmin(o) + size(o)), its weights a triangle or cubic filter stretched by the scale
// and normalized to sum 1 (PIL's resampling, as the CPU kernel computes it). The runs and
// weights depend on sizes only, so they are tables made on the host (in the input's dtype, by
// the CPU's formulas), and each dim is one gather pass: width, then height, as the CPU's
// separable kernel. The backward applies the transposed tables the same way (a gather per
// input coordinate over the outputs that read it), with no scatter.
#include <ATen/MetaFunctions.h>
#include <ATen/native/UpSample.h>
#include <torch/library.h>

#include <cmath>

#include "aten/resample.h"
#include "aten/torch_compat.h"

namespace loom::aten {

namespace {

using at::Tensor;
using OptScale = c10::optional<double>;
using SymSizes = c10::SymIntArrayRef;

// Per output coordinate o: `count` taps at idx[o][k] with weight w[o][k] (k < count[o]).
struct Table {
  int64_t rows = 0, width = 0;
  std::vector<int64_t> idx, count;
  std::vector<double> w;
};

// PIL's filters: a triangle, or the cubic convolution kernel with a = -0.5. The CPU computes
// them in double (its constants are double) from and to T.
template <typename T>
T filter(bool cubic, T v) {
  double x = v < 0.0 ? -v : v;
  if (!cubic) return x < 1.0 ? T(1.0 - x) : T(0.0);
  const double a = -0.5;
  if (x < 1.0) return T(((a + 2.0) * x - (a + 3.0)) * x * x + 1);
  if (x < 2.0) return T((((x - 5) * x + 8) * x - 4) * a);
  return T(0.0);
}

// The CPU's _compute_indices_weights_aa, in T.
template <typename T>
Table forward_table(int64_t in, int64_t out, bool align_corners, OptScale scale, bool cubic) {
  const int interp = cubic ? 4 : 2;
  const T s = at::native::area_pixel_compute_scale<T>(in, out, align_corners, scale);
  const T support = s >= 1.0 ? T((interp * 0.5) * s) : T(interp * 0.5);
  Table t;
  t.rows = out;
  t.width = int64_t(std::ceil(float(support))) * 2 + 1;
  t.idx.assign(size_t(out * t.width), 0);
  t.w.assign(size_t(out * t.width), 0.0);
  t.count.assign(size_t(out), 0);
  const T invscale = s >= 1.0 ? T(1.0 / s) : T(1.0);
  for (int64_t i = 0; i < out; ++i) {
    const T center = T(s * (i + 0.5));
    const int64_t xmin = std::max(int64_t(T(center - support) + 0.5), int64_t(0));
    const int64_t xsize = std::min(int64_t(T(center + support) + 0.5), in) - xmin;
    std::vector<T> w(size_t(std::max<int64_t>(xsize, 0)));
    T total = 0.0;
    for (int64_t j = 0; j < xsize; ++j) {
      w[size_t(j)] = filter<T>(cubic, T((T(j + xmin - center) + 0.5) * invscale));
      total += w[size_t(j)];
    }
    t.count[size_t(i)] = std::max<int64_t>(xsize, 0);
    for (int64_t j = 0; j < xsize && j < t.width; ++j) {
      t.idx[size_t(i * t.width + j)] = xmin + j;
      t.w[size_t(i * t.width + j)] = double(total != 0.0 ? T(w[size_t(j)] / total) : w[size_t(j)]);
    }
  }
  return t;
}

// The transpose: per input coordinate, the outputs that read it and their weights, in
// output order.
Table transpose(const Table& f, int64_t in) {
  std::vector<std::vector<std::pair<int64_t, double>>> by_in(static_cast<size_t>(in));
  for (int64_t o = 0; o < f.rows; ++o)
    for (int64_t k = 0; k < f.count[size_t(o)]; ++k)
      by_in[size_t(f.idx[size_t(o * f.width + k)])].push_back({o, f.w[size_t(o * f.width + k)]});
  Table t;
  t.rows = in;
  for (const auto& v : by_in) t.width = std::max<int64_t>(t.width, int64_t(v.size()));
  t.width = std::max<int64_t>(t.width, 1);
  t.idx.assign(size_t(in * t.width), 0);
  t.w.assign(size_t(in * t.width), 0.0);
  t.count.assign(size_t(in), 0);
  for (int64_t i = 0; i < in; ++i) {
    const auto& v = by_in[size_t(i)];
    t.count[size_t(i)] = int64_t(v.size());
    for (size_t k = 0; k < v.size(); ++k) {
      t.idx[size_t(i * t.width) + k] = v[k].first;
      t.w[size_t(i * t.width) + k] = v[k].second;
    }
  }
  return t;
}

Table table_of(c10::ScalarType st, int64_t in, int64_t out, bool align_corners, OptScale scale,
               bool cubic) {
  return st == at::kDouble ? forward_table<double>(in, out, align_corners, scale, cubic)
                           : forward_table<float>(in, out, align_corners, scale, cubic);
}

// `src` resampled along `dim` by table t into a new contiguous tensor (one gather pass):
// out[..., o, ...] = sum over k < count[o] of src[..., idx[o][k], ...] * w[o][k], the terms
// added in k order.
Tensor apply(const Tensor& src, int64_t dim, const Table& t) {
  std::vector<int64_t> sizes = src.sizes().vec();
  sizes[size_t(dim)] = t.rows;
  const c10::ScalarType st = src.scalar_type();
  Tensor out = empty_loom(sizes, st);
  if (out.numel() == 0) return out;
  // The tables as Loom tensors, each column viewed as (rows) broadcast along `dim`.
  Tensor idx = loom_tensor_of(t.idx, {t.rows, t.width});
  Tensor cnt = loom_tensor_of(t.count, {t.rows});
  Tensor w = at::tensor(t.w, at::kDouble).reshape({t.rows, t.width}).to(src.device(), st);
  std::vector<int64_t> bshape(sizes.size(), 1);
  bshape[size_t(dim)] = t.rows;
  std::vector<Tensor> idx_k, w_k;
  for (int64_t k = 0; k < t.width; ++k) {
    idx_k.push_back(idx.select(1, k).view(bshape));
    w_k.push_back(w.select(1, k).view(bshape));
  }
  Tensor cnt_b = cnt.view(bshape);
  EngineLock lock(engine_mutex());
  const Shape s = shape_of(sizes);
  const DType dt = to_loom(st);
  NodeRef count = expand(read_tensor(cnt_b), s);
  NodeRef sum;
  for (int64_t k = 0; k < t.width; ++k) {
    std::vector<NodeRef> coord;
    for (size_t d = 0; d < sizes.size(); ++d)
      coord.push_back(int64_t(d) == dim ? expand(read_tensor(idx_k[size_t(k)]), s)
                                        : iota(DType::Int64, s, int(d)));
    NodeRef term = binary(Op::Mul, gather_at(src, coord), expand(read_tensor(w_k[size_t(k)]), s));
    // Past a run's end the weight is 0, but 0 * inf is not: such taps add nothing.
    term = where(binary(Op::Lt, int_const(k, s), count), term, scalar(0, dt, s));
    sum = sum ? binary(Op::Add, sum, term) : term;
  }
  assign(out, sum);
  return out;
}

Tensor like_meta(const Tensor& t, const Tensor& meta) {
  if (t.strides() == meta.strides()) return t;
  Tensor r = result_like(meta);
  EngineLock lock(engine_mutex());
  assign(r, read_tensor(t));
  return r;
}

template <bool kCubic>
Tensor aa_forward(const Tensor& self, SymSizes output_size, bool align_corners, OptScale sh,
                  OptScale sw) {
  const char* op = kCubic ? "_upsample_bicubic2d_aa" : "_upsample_bilinear2d_aa";
  check_operands(op, {self});
  at::IntArrayRef os = LOOM_INT_SIZES(output_size);
  Tensor meta = kCubic
                    ? at::meta::_upsample_bicubic2d_aa(to_meta(self), os, align_corners, sh, sw)
                    : at::meta::_upsample_bilinear2d_aa(to_meta(self), os, align_corners, sh, sw);
  // which dtypes the CPU kernel takes is the running torch's (2.x's take reduced floats)
  static const CpuVerdicts verdicts;
  verdicts.check(self.scalar_type(), [&] {
    Tensor x = at::ones({1, 1, 2, 2}, at::TensorOptions().dtype(self.scalar_type()));
    if (kCubic)
      at::_upsample_bicubic2d_aa(x, {3, 3}, false, c10::nullopt, c10::nullopt);
    else
      at::_upsample_bilinear2d_aa(x, {3, 3}, false, c10::nullopt, c10::nullopt);
  });
  if (meta.numel() == 0) return result_like(meta);
  const c10::ScalarType st = self.scalar_type();
  Table tw = table_of(st, self.size(3), os[1], align_corners, sw, kCubic);
  Table th = table_of(st, self.size(2), os[0], align_corners, sh, kCubic);
  return like_meta(apply(apply(self, 3, tw), 2, th), meta);
}

template <bool kCubic>
Tensor aa_backward(const Tensor& grad_out, SymSizes output_size, SymSizes input_size,
                   bool align_corners, OptScale sh, OptScale sw) {
  const char* op = kCubic ? "_upsample_bicubic2d_aa_backward" : "_upsample_bilinear2d_aa_backward";
  check_operands(op, {grad_out});
  at::IntArrayRef os = LOOM_INT_SIZES(output_size);
  at::IntArrayRef is = LOOM_INT_SIZES(input_size);
  Tensor meta = kCubic ? at::meta::_upsample_bicubic2d_aa_backward(to_meta(grad_out), os, is,
                                                                   align_corners, sh, sw)
                       : at::meta::_upsample_bilinear2d_aa_backward(to_meta(grad_out), os, is,
                                                                    align_corners, sh, sw);
  static const CpuVerdicts verdicts;  // as the forward's
  verdicts.check(grad_out.scalar_type(), [&] {
    Tensor g = at::ones({1, 1, 3, 3}, at::TensorOptions().dtype(grad_out.scalar_type()));
    const std::vector<int64_t> o{3, 3}, i{1, 1, 2, 2};
    if (kCubic)
      at::_upsample_bicubic2d_aa_backward(g, o, i, false, c10::nullopt, c10::nullopt);
    else
      at::_upsample_bilinear2d_aa_backward(g, o, i, false, c10::nullopt, c10::nullopt);
  });
  if (meta.numel() == 0) return result_like(meta);
  if (grad_out.numel() == 0) {
    Tensor r = result_like(meta);
    EngineLock lock(engine_mutex());
    assign(r, scalar(0, to_loom(r.scalar_type()), shape_of(r.sizes())));
    return r;
  }
  const c10::ScalarType st = grad_out.scalar_type();
  Table tw = transpose(table_of(st, is[3], os[1], align_corners, sw, kCubic), is[3]);
  Table th = transpose(table_of(st, is[2], os[0], align_corners, sh, kCubic), is[2]);
  return like_meta(apply(apply(grad_out, 2, th), 3, tw), meta);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_upsample_bilinear2d_aa", TORCH_FN(aa_forward<false>));
  m.impl("_upsample_bicubic2d_aa", TORCH_FN(aa_forward<true>));
  m.impl("_upsample_bilinear2d_aa_backward", TORCH_FN(aa_backward<false>));
  m.impl("_upsample_bicubic2d_aa_backward", TORCH_FN(aa_backward<true>));
}

}  // namespace loom::aten
