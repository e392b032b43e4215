// Interpolation (upsample_*) forward and backward: nearest, nearest-exact, linear, bilinear,
// trilinear, bicubic. Each spatial output coordinate reads one (nearest), two (linear) or
// four (cubic) input coordinates along its dim, computed by index arithmetic with the CPU kernel's
// float formulas, so the forward is a fused gather; the backward adds each gradient, weighted, into
// the elements it read from. The .vec overloads are composites over these in 1.13.
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

NodeRef f_const(double v, DType t, const Shape& s) { return constant(Scalar::of_float(v), t, s); }

// PyTorch's compute_scales_value: 1/scale (computed in double) when a positive scale is
// given, else in/out, divided in T.
double scale_value(OptScale scale, int64_t in, int64_t out, DType t) {
  if (scale.has_value() && *scale > 0) {
    double s = 1.0 / *scale;
    return t == DType::Float32 ? double(float(s)) : s;
  }
  return t == DType::Float32 ? double(float(in) / float(out)) : double(in) / double(out);
}

// The input coordinate that nearest (or nearest-exact) output coordinate `o` reads.
NodeRef nearest_source(const NodeRef& o, int64_t in, int64_t out, OptScale scale, bool exact) {
  const Shape& s = o->shape;
  if (!exact && out == in) return o;
  if (!exact && out == 2 * in) return binary(Op::FloorDiv, o, int_const(2, s));
  double k = scale_value(scale, in, out, DType::Float32);
  // nearest: floorf(float(o) * k); exact: floorf(float((double(o) + 0.5) * k)).
  NodeRef x =
      exact ? cast(binary(Op::Mul,
                          binary(Op::Add, cast(o, DType::Float64), f_const(0.5, DType::Float64, s)),
                          f_const(k, DType::Float64, s)),
                   DType::Float32)
            : binary(Op::Mul, cast(o, DType::Float32), f_const(k, DType::Float32, s));
  NodeRef i = cast(unary(Op::Floor, x), DType::Int64);
  // Never below 0 (o and k are not negative), but the clamp shows the scatter of the
  // backward that it stays in the input (NOTE [Parallel scatters]).
  return binary(Op::Minimum, binary(Op::Maximum, i, int_const(0, s)), int_const(in - 1, s));
}

// One dim of linear or cubic interpolation: output coordinate o reads idx[t] with weight w[t].
struct Taps {
  std::vector<NodeRef> idx, w;
};

// area_pixel_compute_scale, in acc.
double area_scale(int64_t in, int64_t out, bool align_corners, OptScale scale, DType acc) {
  if (!align_corners) return scale_value(scale, in, out, acc);
  if (out <= 1) return 0.0;
  return acc == DType::Float32 ? double(float(in - 1) / float(out - 1))
                               : double(in - 1) / double(out - 1);
}

// area_pixel_compute_source_index: the real input coordinate of output coordinate o.
NodeRef area_source(const NodeRef& o, double ratio, bool align_corners, bool cubic, DType acc) {
  const Shape& s = o->shape;
  NodeRef x = cast(o, acc);
  if (align_corners) return binary(Op::Mul, f_const(ratio, acc, s), x);
  NodeRef real = binary(
      Op::Sub, binary(Op::Mul, f_const(ratio, acc, s), binary(Op::Add, x, f_const(0.5, acc, s))),
      f_const(0.5, acc, s));
  return cubic ? real : binary(Op::Maximum, real, f_const(0, acc, s));
}

Taps linear_taps(const NodeRef& o, int64_t in, int64_t out, bool align_corners, OptScale scale,
                 DType acc) {
  const Shape& s = o->shape;
  if (out == in) return {{o, o}, {f_const(1, acc, s), f_const(0, acc, s)}};
  NodeRef real =
      area_source(o, area_scale(in, out, align_corners, scale, acc), align_corners, false, acc);
  // compute_source_index_and_lambda: i0 = trunc(real), l1 = real - i0 (unclamped). real is
  // in [0, in - 1] for any valid size and scale; the clamp only keeps the gather in bounds.
  NodeRef i0 = binary(Op::Minimum, binary(Op::Maximum, cast(real, DType::Int64), int_const(0, s)),
                      int_const(in - 1, s));
  NodeRef l1 = binary(Op::Sub, real, cast(i0, acc));
  // i0 + (i0 < in - 1), as a clamp: the scatter of the backward sees that it stays in the
  // input (NOTE [Parallel scatters]).
  NodeRef i1 = binary(Op::Minimum, binary(Op::Add, i0, int_const(1, s)), int_const(in - 1, s));
  return {{i0, i1}, {binary(Op::Sub, f_const(1, acc, s), l1), l1}};
}

// Bicubic: four taps at floor(real) - 1 .. + 2, clamped into the input (the CPU's bounded
// access), weighted by the cubic convolution kernel with A = -0.75.
Taps cubic_taps(const NodeRef& o, int64_t in, int64_t out, bool align_corners, OptScale scale,
                DType acc) {
  const Shape& s = o->shape;
  NodeRef real =
      area_source(o, area_scale(in, out, align_corners, scale, acc), align_corners, true, acc);
  NodeRef i = cast(unary(Op::Floor, real), DType::Int64);
  NodeRef t = binary(Op::Sub, real, cast(i, acc));
  const double a = -0.75;
  auto k = [&](double v) { return f_const(v, acc, s); };
  auto mul = [](const NodeRef& x, const NodeRef& y) { return binary(Op::Mul, x, y); };
  auto add = [](const NodeRef& x, const NodeRef& y) { return binary(Op::Add, x, y); };
  auto sub = [](const NodeRef& x, const NodeRef& y) { return binary(Op::Sub, x, y); };
  // |x| <= 1: ((A + 2) x - (A + 3)) x^2 + 1;  1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A.
  auto near = [&](const NodeRef& x) {
    return add(mul(mul(sub(mul(k(a + 2), x), k(a + 3)), x), x), k(1));
  };
  auto far = [&](const NodeRef& x) {
    return sub(mul(add(mul(sub(mul(k(a), x), k(5 * a)), x), k(8 * a)), x), k(4 * a));
  };
  NodeRef u = sub(k(1), t);
  Taps taps;
  taps.w = {far(add(t, k(1))), near(t), near(u), far(add(u, k(1)))};
  for (int64_t j = -1; j <= 2; ++j)
    taps.idx.push_back(binary(Op::Minimum,
                              binary(Op::Maximum, add(i, int_const(j, s)), int_const(0, s)),
                              int_const(in - 1, s)));
  return taps;
}

DType acc_of(c10::ScalarType t) { return t == at::kDouble ? DType::Float64 : DType::Float32; }

enum class Mode { Nearest, NearestExact, Linear, Cubic };

struct Spec {
  std::vector<int64_t> in, out;  // full sizes (N, C, spatial...)
  std::vector<OptScale> scales;  // one per spatial dim
};

// Builds the terms of a result of shape `out`: for nearest one term with weight 1; else one
// per combination of the spatial dims' taps. `term(coords, weight)` gets input coordinates.
template <class Term>
void for_each_term(const Spec& sp, Mode mode, bool align_corners, DType acc, Term term) {
  const int64_t nd = int64_t(sp.out.size());
  Shape os(sp.out.begin(), sp.out.end());
  std::vector<NodeRef> base;
  std::vector<Taps> taps;
  for (int64_t d = 0; d < nd; ++d) {
    NodeRef o = iota(DType::Int64, os, int(d));
    int64_t in = sp.in[size_t(d)], out = sp.out[size_t(d)];
    OptScale scale = d < 2 ? c10::nullopt : sp.scales[size_t(d - 2)];
    if (d < 2)
      base.push_back(o);
    else if (mode == Mode::Nearest || mode == Mode::NearestExact)
      base.push_back(nearest_source(o, in, out, scale, mode == Mode::NearestExact));
    else if (mode == Mode::Linear)
      taps.push_back(linear_taps(o, in, out, align_corners, scale, acc));
    else
      taps.push_back(cubic_taps(o, in, out, align_corners, scale, acc));
  }
  if (taps.empty()) return term(base, NodeRef());
  // Mixed-radix count over the taps of each dim.
  std::vector<size_t> at(taps.size(), 0);
  while (true) {
    std::vector<NodeRef> c = base;
    NodeRef w;
    for (size_t j = 0; j < taps.size(); ++j) {
      c.push_back(taps[j].idx[at[j]]);
      w = w ? binary(Op::Mul, w, taps[j].w[at[j]]) : taps[j].w[at[j]];
    }
    term(c, w);
    size_t j = taps.size();
    while (j > 0 && ++at[j - 1] == taps[j - 1].idx.size()) at[--j] = 0;
    if (j == 0) return;
  }
}

// Which dtypes the CPU's kernels take is the running torch's (1.13's cubic and linear ones
// lack float16, its channels-last ones differ; 2.x's take more): the op of this mode and
// rank runs on a probe of self's dtype and layout, once per dtype (a table per op and
// layout), and raises the CPU's own error.
void check_upsample_dtype(const Tensor& self, Mode mode) {
  const int64_t k = self.dim() - 2;
  if (k < 1 || k > 3) return;  // the meta function has refused it
  const bool cl = (k == 2 && self.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
                  (k == 3 && self.is_contiguous(at::MemoryFormat::ChannelsLast3d));
  static const CpuVerdicts verdicts[4][3][2];
  verdicts[int(mode)][k - 1][cl].check(self.scalar_type(), [&] {
    std::vector<int64_t> sizes(size_t(k + 2), 2);
    sizes[0] = 1;
    Tensor x = at::ones(sizes, at::TensorOptions().dtype(self.scalar_type()));
    if (cl)
      x = x.contiguous(k == 2 ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::ChannelsLast3d);
    const std::vector<int64_t> os(size_t(k), 3);
    const OptScale none;
    switch (mode) {
      case Mode::Nearest:
        if (k == 1) at::upsample_nearest1d(x, os, none);
        if (k == 2) at::upsample_nearest2d(x, os, none, none);
        if (k == 3) at::upsample_nearest3d(x, os, none, none, none);
        break;
      case Mode::NearestExact:
        if (k == 1) at::_upsample_nearest_exact1d(x, os, none);
        if (k == 2) at::_upsample_nearest_exact2d(x, os, none, none);
        if (k == 3) at::_upsample_nearest_exact3d(x, os, none, none, none);
        break;
      case Mode::Linear:
        if (k == 1) at::upsample_linear1d(x, os, false, none);
        if (k == 2) at::upsample_bilinear2d(x, os, false, none, none);
        if (k == 3) at::upsample_trilinear3d(x, os, false, none, none, none);
        break;
      case Mode::Cubic:
        if (k == 2) at::upsample_bicubic2d(x, os, false, none, none);
        break;
    }
  });
}

Tensor upsample_forward(const Tensor& self, const Tensor& meta, const std::vector<OptScale>& scales,
                        Mode mode, bool align_corners) {
  check_upsample_dtype(self, mode);
  Tensor out = result_like(meta);
  if (out.numel() == 0) return out;
  EngineLock lock(engine_mutex());
  DType acc = acc_of(self.scalar_type());
  Spec sp{self.sizes().vec(), out.sizes().vec(), scales};
  NodeRef sum;
  for_each_term(sp, mode, align_corners, acc, [&](const std::vector<NodeRef>& c, const NodeRef& w) {
    NodeRef v = gather_at(self, c);
    if (w) v = binary(Op::Mul, w, cast(v, acc));
    sum = sum ? binary(Op::Add, sum, v) : v;
  });
  assign(out, sum);
  return out;
}

// Whether grad's elements are cheap to read again and again: realized, or computed by a
// short elementwise expression (no gathers or reductions, which a broadcast read would
// run once per tap: a bicubic forward's sixteen gathers, sixteen times).
bool cheap_to_reread(const Tensor& grad) {
  const NodeRef& v = buffer_of(grad).value();
  if (v->realized) return true;
  if (v->op != Op::Store) return false;
  std::vector<const Node*> stack{v->src[1].get()};
  for (int budget = 64; !stack.empty(); --budget) {
    const Node* n = stack.back();
    stack.pop_back();
    if (budget == 0 || n->op == Op::Gather || n->op == Op::Reduce || n->op == Op::Scan) return false;
    if (n->op == Op::Load) {
      if (!n->src[0]->realized) return false;
      continue;
    }
    for (const auto& src : n->src) stack.push_back(src.get());
  }
  return true;
}

// NOTE [Tap scatters]: linear and cubic interpolation's gradient adds each output's
// gradient, weighted, at each of its taps. As one scatter per combination of taps (4 for
// bilinear, 16 bicubic), each kernel computed the taps again and read the gradient again.
// Here one scatter runs over the output positions and, innermost, one dim per spatial dim
// of its taps (2 or 4 each): a position's taps are computed once per dim and its
// gradient added at each in the order the terms had (position by position, as the CPU).
// 8x32x32x32 -> 64x64 bilinear gradient 6.5 -> 2.6 ms (eager 5.1-5.3). The gradient is read
// once per tap: one that gathers compute (the forward's own output, in a loss on it) is
// stored first by a kernel of its own. Scattered per term instead (each term's scatter
// recomputing the taps, the gradient stored for them anyway), a loss on the output took
// 4.6 ms bilinear and 9.7 bicubic (8x16x32x32 -> 64x64; eager 4.3 and 9.9); stored, 2.2
// and 3.8.
void scatter_taps(const Tensor& acc_t, const Tensor& grad_out, const Spec& sp, Mode mode,
                  bool align_corners, DType acc) {
  const int64_t nd = int64_t(sp.out.size()), k = nd - 2, per = mode == Mode::Linear ? 2 : 4;
  Shape os(sp.out.begin(), sp.out.end());
  for (int64_t d = 0; d < k; ++d) os.push_back(per);
  std::vector<NodeRef> coord = {iota(DType::Int64, os, 0), iota(DType::Int64, os, 1)};
  NodeRef weight;
  for (int64_t d = 2; d < nd; ++d) {
    NodeRef o = iota(DType::Int64, os, int(d));
    const int64_t in = sp.in[size_t(d)], out = sp.out[size_t(d)];
    OptScale scale = sp.scales[size_t(d - 2)];
    Taps taps = mode == Mode::Linear ? linear_taps(o, in, out, align_corners, scale, acc)
                                     : cubic_taps(o, in, out, align_corners, scale, acc);
    NodeRef t = iota(DType::Int64, os, int(nd + d - 2));
    NodeRef idx = taps.idx[0], w = taps.w[0];
    for (int64_t j = 1; j < per; ++j) {
      NodeRef at = binary(Op::Eq, t, int_const(j, os));
      if (taps.idx[size_t(j)] != idx) idx = where(at, taps.idx[size_t(j)], idx);
      w = where(at, taps.w[size_t(j)], w);
    }
    coord.push_back(idx);
    weight = weight ? binary(Op::Mul, weight, w) : w;
  }
  Tensor g = grad_out;
  for (int64_t d = 0; d < k; ++d) g = g.unsqueeze(-1);
  NodeRef gv = cast(read_tensor(g.expand(std::vector<int64_t>(os.begin(), os.end()))), acc);
  scatter_add_at(acc_t, binary(Op::Mul, gv, weight), coord);
}

Tensor upsample_backward(const Tensor& grad_out, SymSizes output_size, SymSizes input_size,
                         const Tensor& meta, const std::vector<OptScale>& scales, Mode mode,
                         bool align_corners) {
  (void)output_size;  // the meta call checked it against grad_out
  EngineLock lock(engine_mutex());
  std::vector<int64_t> in = LOOM_INT_SIZES(input_size).vec();
  Tensor acc_t = zeros_for_scatter(in, meta.scalar_type());
  if (grad_out.numel() > 0 && meta.numel() > 0) {
    DType acc = acc_of(grad_out.scalar_type());
    Spec sp{in, grad_out.sizes().vec(), scales};
    if (mode == Mode::Linear || mode == Mode::Cubic) {
      // A gradient that gathers compute (a loss on the interpolation's own output) is stored
      // first, by one kernel, rather than recomputed at each tap.
      if (!cheap_to_reread(grad_out)) issue_library_call(buffer_of(grad_out).value());
      scatter_taps(acc_t, grad_out, sp, mode, align_corners, acc);
    } else {
      NodeRef g = cast(read_tensor(grad_out), acc);
      for_each_term(sp, mode, align_corners, acc,
                    [&](const std::vector<NodeRef>& c, const NodeRef& w) {
                      scatter_add_at(acc_t, w ? binary(Op::Mul, g, w) : g, c);
                    });
    }
  }
  Tensor out = finish_scatter(acc_t, meta.scalar_type());
  if (meta.strides() != out.strides()) {  // channels-last grad_out gives a channels-last result
    Tensor r = result_like(meta);
    assign(r, read_tensor(out));
    return r;
  }
  return out;
}

at::IntArrayRef ints(SymSizes s) { return LOOM_INT_SIZES(s); }

// --- nearest ---

Tensor nearest1d(const Tensor& self, SymSizes os, OptScale s) {
  check_operands("upsample_nearest1d", {self});
  return upsample_forward(self, at::meta::upsample_nearest1d(to_meta(self), ints(os), s), {s},
                          Mode::Nearest, false);
}
Tensor nearest2d(const Tensor& self, SymSizes os, OptScale sh, OptScale sw) {
  check_operands("upsample_nearest2d", {self});
  return upsample_forward(self, at::meta::upsample_nearest2d(to_meta(self), ints(os), sh, sw),
                          {sh, sw}, Mode::Nearest, false);
}
Tensor nearest3d(const Tensor& self, SymSizes os, OptScale sd, OptScale sh, OptScale sw) {
  check_operands("upsample_nearest3d", {self});
  return upsample_forward(self, at::meta::upsample_nearest3d(to_meta(self), ints(os), sd, sh, sw),
                          {sd, sh, sw}, Mode::Nearest, false);
}
Tensor nearest_exact1d(const Tensor& self, SymSizes os, OptScale s) {
  check_operands("_upsample_nearest_exact1d", {self});
  return upsample_forward(self, at::meta::_upsample_nearest_exact1d(to_meta(self), ints(os), s),
                          {s}, Mode::NearestExact, false);
}
Tensor nearest_exact2d(const Tensor& self, SymSizes os, OptScale sh, OptScale sw) {
  check_operands("_upsample_nearest_exact2d", {self});
  return upsample_forward(self,
                          at::meta::_upsample_nearest_exact2d(to_meta(self), ints(os), sh, sw),
                          {sh, sw}, Mode::NearestExact, false);
}
Tensor nearest_exact3d(const Tensor& self, SymSizes os, OptScale sd, OptScale sh, OptScale sw) {
  check_operands("_upsample_nearest_exact3d", {self});
  return upsample_forward(self,
                          at::meta::_upsample_nearest_exact3d(to_meta(self), ints(os), sd, sh, sw),
                          {sd, sh, sw}, Mode::NearestExact, false);
}

Tensor nearest1d_bwd(const Tensor& g, SymSizes os, SymSizes is, OptScale s) {
  check_operands("upsample_nearest1d_backward", {g});
  Tensor m = at::meta::upsample_nearest1d_backward(to_meta(g), ints(os), ints(is), s);
  return upsample_backward(g, os, is, m, {s}, Mode::Nearest, false);
}
Tensor nearest2d_bwd(const Tensor& g, SymSizes os, SymSizes is, OptScale sh, OptScale sw) {
  check_operands("upsample_nearest2d_backward", {g});
  Tensor m = at::meta::upsample_nearest2d_backward(to_meta(g), ints(os), ints(is), sh, sw);
  return upsample_backward(g, os, is, m, {sh, sw}, Mode::Nearest, false);
}
Tensor nearest3d_bwd(const Tensor& g, SymSizes os, SymSizes is, OptScale sd, OptScale sh,
                     OptScale sw) {
  check_operands("upsample_nearest3d_backward", {g});
  Tensor m = at::meta::upsample_nearest3d_backward(to_meta(g), ints(os), ints(is), sd, sh, sw);
  return upsample_backward(g, os, is, m, {sd, sh, sw}, Mode::Nearest, false);
}
Tensor nearest_exact1d_bwd(const Tensor& g, SymSizes os, SymSizes is, OptScale s) {
  check_operands("_upsample_nearest_exact1d_backward", {g});
  Tensor m = at::meta::_upsample_nearest_exact1d_backward(to_meta(g), ints(os), ints(is), s);
  return upsample_backward(g, os, is, m, {s}, Mode::NearestExact, false);
}
Tensor nearest_exact2d_bwd(const Tensor& g, SymSizes os, SymSizes is, OptScale sh, OptScale sw) {
  check_operands("_upsample_nearest_exact2d_backward", {g});
  Tensor m = at::meta::_upsample_nearest_exact2d_backward(to_meta(g), ints(os), ints(is), sh, sw);
  return upsample_backward(g, os, is, m, {sh, sw}, Mode::NearestExact, false);
}
Tensor nearest_exact3d_bwd(const Tensor& g, SymSizes os, SymSizes is, OptScale sd, OptScale sh,
                           OptScale sw) {
  check_operands("_upsample_nearest_exact3d_backward", {g});
  Tensor m =
      at::meta::_upsample_nearest_exact3d_backward(to_meta(g), ints(os), ints(is), sd, sh, sw);
  return upsample_backward(g, os, is, m, {sd, sh, sw}, Mode::NearestExact, false);
}

// 1.13 gives upsample_nearest3d.vec and _upsample_nearest_exact3d.vec (alone of the .vec
// overloads) CPU kernels of their own rather than a composite; these resolve the sizes and
// scales as the composites of the other .vec overloads do.
using OptSizes = at::OptionalSymIntArrayRef;
using Scales = c10::optional<c10::ArrayRef<double>>;

c10::optional<at::IntArrayRef> opt_ints(OptSizes s) {
  if (!s.has_value()) return c10::nullopt;
  return LOOM_INT_SIZES(*s);
}

template <Tensor (*fn)(const Tensor&, SymSizes, OptScale, OptScale, OptScale)>
Tensor vec3d(const Tensor& input, OptSizes output_size, Scales scales) {
  auto os = at::native::upsample::compute_output_size(input.sizes(), opt_ints(output_size), scales);
  using at::native::upsample::get_scale_value;
  return fn(input, LOOM_SYM_SIZES(os), get_scale_value(scales, 0), get_scale_value(scales, 1),
            get_scale_value(scales, 2));
}

template <Tensor (*fn)(const Tensor&, SymSizes, SymSizes, OptScale, OptScale, OptScale)>
Tensor vec3d_bwd(const Tensor& g, OptSizes output_size, SymSizes input_size, Scales scales) {
  auto os =
      at::native::upsample::compute_output_size(ints(input_size), opt_ints(output_size), scales);
  using at::native::upsample::get_scale_value;
  return fn(g, LOOM_SYM_SIZES(os), input_size, get_scale_value(scales, 0),
            get_scale_value(scales, 1), get_scale_value(scales, 2));
}

// --- linear ---

Tensor linear1d(const Tensor& self, SymSizes os, bool ac, OptScale s) {
  check_operands("upsample_linear1d", {self});
  return upsample_forward(self, at::meta::upsample_linear1d(to_meta(self), ints(os), ac, s), {s},
                          Mode::Linear, ac);
}
Tensor bilinear2d(const Tensor& self, SymSizes os, bool ac, OptScale sh, OptScale sw) {
  check_operands("upsample_bilinear2d", {self});
  return upsample_forward(self, at::meta::upsample_bilinear2d(to_meta(self), ints(os), ac, sh, sw),
                          {sh, sw}, Mode::Linear, ac);
}
Tensor trilinear3d(const Tensor& self, SymSizes os, bool ac, OptScale sd, OptScale sh,
                   OptScale sw) {
  check_operands("upsample_trilinear3d", {self});
  return upsample_forward(self,
                          at::meta::upsample_trilinear3d(to_meta(self), ints(os), ac, sd, sh, sw),
                          {sd, sh, sw}, Mode::Linear, ac);
}
Tensor linear1d_bwd(const Tensor& g, SymSizes os, SymSizes is, bool ac, OptScale s) {
  check_operands("upsample_linear1d_backward", {g});
  Tensor m = at::meta::upsample_linear1d_backward(to_meta(g), ints(os), ints(is), ac, s);
  return upsample_backward(g, os, is, m, {s}, Mode::Linear, ac);
}
Tensor bilinear2d_bwd(const Tensor& g, SymSizes os, SymSizes is, bool ac, OptScale sh,
                      OptScale sw) {
  check_operands("upsample_bilinear2d_backward", {g});
  Tensor m = at::meta::upsample_bilinear2d_backward(to_meta(g), ints(os), ints(is), ac, sh, sw);
  return upsample_backward(g, os, is, m, {sh, sw}, Mode::Linear, ac);
}
Tensor trilinear3d_bwd(const Tensor& g, SymSizes os, SymSizes is, bool ac, OptScale sd, OptScale sh,
                       OptScale sw) {
  check_operands("upsample_trilinear3d_backward", {g});
  Tensor m =
      at::meta::upsample_trilinear3d_backward(to_meta(g), ints(os), ints(is), ac, sd, sh, sw);
  return upsample_backward(g, os, is, m, {sd, sh, sw}, Mode::Linear, ac);
}

Tensor bicubic2d(const Tensor& self, SymSizes os, bool ac, OptScale sh, OptScale sw) {
  check_operands("upsample_bicubic2d", {self});
  return upsample_forward(self, at::meta::upsample_bicubic2d(to_meta(self), ints(os), ac, sh, sw),
                          {sh, sw}, Mode::Cubic, ac);
}
Tensor bicubic2d_bwd(const Tensor& g, SymSizes os, SymSizes is, bool ac, OptScale sh, OptScale sw) {
  check_operands("upsample_bicubic2d_backward", {g});
  Tensor m = at::meta::upsample_bicubic2d_backward(to_meta(g), ints(os), ints(is), ac, sh, sw);
  return upsample_backward(g, os, is, m, {sh, sw}, Mode::Cubic, ac);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("upsample_nearest1d", TORCH_FN(nearest1d));
  m.impl("upsample_nearest2d", TORCH_FN(nearest2d));
  m.impl("upsample_nearest3d", TORCH_FN(nearest3d));
  if (!composite_in_this_release("upsample_nearest3d.vec"))
    m.impl("upsample_nearest3d.vec", TORCH_FN(vec3d<nearest3d>));
  m.impl("upsample_nearest3d_backward.vec", TORCH_FN(vec3d_bwd<nearest3d_bwd>));
  if (!composite_in_this_release("_upsample_nearest_exact3d.vec"))
    m.impl("_upsample_nearest_exact3d.vec", TORCH_FN(vec3d<nearest_exact3d>));
  m.impl("_upsample_nearest_exact3d_backward.vec", TORCH_FN(vec3d_bwd<nearest_exact3d_bwd>));
  m.impl("_upsample_nearest_exact1d", TORCH_FN(nearest_exact1d));
  m.impl("_upsample_nearest_exact2d", TORCH_FN(nearest_exact2d));
  m.impl("_upsample_nearest_exact3d", TORCH_FN(nearest_exact3d));
  m.impl("upsample_nearest1d_backward", TORCH_FN(nearest1d_bwd));
  m.impl("upsample_nearest2d_backward", TORCH_FN(nearest2d_bwd));
  m.impl("upsample_nearest3d_backward", TORCH_FN(nearest3d_bwd));
  m.impl("_upsample_nearest_exact1d_backward", TORCH_FN(nearest_exact1d_bwd));
  m.impl("_upsample_nearest_exact2d_backward", TORCH_FN(nearest_exact2d_bwd));
  m.impl("_upsample_nearest_exact3d_backward", TORCH_FN(nearest_exact3d_bwd));
  m.impl("upsample_linear1d", TORCH_FN(linear1d));
  m.impl("upsample_bilinear2d", TORCH_FN(bilinear2d));
  m.impl("upsample_trilinear3d", TORCH_FN(trilinear3d));
  m.impl("upsample_linear1d_backward", TORCH_FN(linear1d_bwd));
  m.impl("upsample_bilinear2d_backward", TORCH_FN(bilinear2d_bwd));
  m.impl("upsample_trilinear3d_backward", TORCH_FN(trilinear3d_bwd));
  m.impl("upsample_bicubic2d", TORCH_FN(bicubic2d));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(bicubic2d_bwd));
}

}  // namespace loom::aten
