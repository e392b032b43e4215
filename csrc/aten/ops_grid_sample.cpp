// grid_sample (grid_sampler_2d/3d) forward and backward. Each output element reads the
// input at a real coordinate given by the grid: one element (nearest), the 2^k corners
// around it (bilinear), or 4x4 (bicubic). The forward is a fused gather; the backward adds
// each gradient, weighted, into the corners it read from, and sums the grid's gradient over
// channels. Coordinates follow the CPU's kernels: the 2-d one's vectorized formulas
// (GridSamplerKernel.cpp) and the 3-d one's scalar ones (GridSampler.h), which round
// differently (2-d nearest rounds halves to even, 3-d away from zero).
#include <ATen/native/GridSamplerUtils.h>
#include <torch/library.h>

#include "aten/resample.h"

namespace loom::aten {

namespace {

using at::Tensor;

enum class Interp { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Pad { Zeros = 0, Border = 1, Reflection = 2 };

NodeRef add(const NodeRef& a, const NodeRef& b) { return binary(Op::Add, a, b); }
NodeRef sub(const NodeRef& a, const NodeRef& b) { return binary(Op::Sub, a, b); }
NodeRef mul(const NodeRef& a, const NodeRef& b) { return binary(Op::Mul, a, b); }
NodeRef land(const NodeRef& a, const NodeRef& b) { return binary(Op::LogicalAnd, a, b); }

// The coordinate arithmetic of one grid sample, on nodes of the sampled positions' shape
// (N, 1, out...): `t` the dtype, `vec` the 2-d kernel's formulas.
struct Coords {
  DType t;
  Shape s;
  Pad pad;
  bool align, vec;

  NodeRef k(double v) const { return scalar(v, t, s); }

  // grid_sampler_unnormalize: [-1, 1] to pixel coordinates.
  NodeRef unnormalize(const NodeRef& g, int64_t size) const {
    double n = double(size);
    if (vec)
      return align ? mul(add(g, k(1)), k((n - 1) / 2)) : sub(mul(add(g, k(1)), k(n / 2)), k(0.5));
    return align ? mul(binary(Op::Div, add(g, k(1)), k(2)), k(n - 1))
                 : binary(Op::Div, sub(mul(add(g, k(1)), k(n)), k(1)), k(2));
  }
  // d unnormalize / d g.
  double unnormalize_grad(int64_t size) const {
    return align ? double(size - 1) / 2 : double(size) / 2;
  }
  NodeRef clip(const NodeRef& x, int64_t size) const {
    return binary(Op::Minimum, binary(Op::Maximum, x, k(0)), k(double(size - 1)));
  }
  // 1 strictly inside (0, size - 1), else 0: the clip's gradient.
  NodeRef clip_grad(const NodeRef& x, int64_t size) const {
    return cast(land(binary(Op::Gt, x, k(0)), binary(Op::Lt, x, k(double(size - 1)))), t);
  }
  // reflect_coordinates: x folded into [low, high] (align_corners: [0, size - 1], else
  // [-0.5, size - 0.5]); `sign` gets the fold's gradient, +1 or -1.
  NodeRef reflect(const NodeRef& x, int64_t size, NodeRef* sign) const {
    if (align && size <= 1) {
      if (sign) *sign = k(0);
      return k(0);
    }
    const double low = align ? 0.0 : -0.5, span = align ? double(size - 1) : double(size);
    NodeRef rel = sub(x, k(low));
    NodeRef neg = binary(Op::Lt, rel, k(0));
    NodeRef a = unary(Op::Abs, rel);
    NodeRef r;
    NodeRef flipped;  // Bool: the fold runs backwards here
    if (vec) {
      // extra = |x - low| mod 2 span by truncation; the nearer end of the span.
      NodeRef twice = k(2 * span);
      NodeRef extra = sub(a, mul(unary(Op::Trunc, binary(Op::Div, a, twice)), twice));
      NodeRef back = sub(twice, extra);
      flipped = binary(Op::Gt, extra, back);
      r = add(where(flipped, back, extra), k(low));
    } else {
      NodeRef extra = binary(Op::Fmod, a, k(span));
      NodeRef flips = unary(Op::Floor, binary(Op::Div, a, k(span)));
      flipped = binary(Op::Ne, binary(Op::Fmod, flips, k(2)), k(0));
      r = add(where(flipped, sub(k(span), extra), extra), k(low));
    }
    if (sign) *sign = where(binary(Op::LogicalXor, flipped, neg), k(-1), k(1));
    return r;
  }
  // compute_coordinates: the padding mode applied to a pixel coordinate; `grad` (when
  // given) is multiplied by its gradient.
  NodeRef pad_coordinate(const NodeRef& x, int64_t size, NodeRef* grad) const {
    if (pad == Pad::Zeros) return x;
    NodeRef y = x;
    if (pad == Pad::Reflection) {
      NodeRef sign;
      y = reflect(x, size, grad ? &sign : nullptr);
      if (grad) *grad = mul(*grad, sign);
    }
    if (grad) *grad = mul(*grad, clip_grad(y, size));
    return clip(y, size);
  }
  // grid_sampler_compute_source_index(_set_grad).
  NodeRef source(const NodeRef& g, int64_t size, NodeRef* grad) const {
    if (grad) *grad = k(unnormalize_grad(size));
    return pad_coordinate(unnormalize(g, size), size, grad);
  }
  // Nearest rounding: halves to even in the 2-d kernel (vector round), away from zero in
  // the 3-d one (std::round).
  NodeRef round(const NodeRef& x) const {
    if (vec) return unary(Op::Round, x);
    NodeRef tr = unary(Op::Trunc, x);
    NodeRef away = binary(Op::Ge, unary(Op::Abs, sub(x, tr)), k(0.5));
    return where(away, add(tr, binary(Op::CopySign, k(1), x)), tr);
  }
};

// One input element that an output element reads: its integer coordinate per spatial dim
// (expanded to the full output shape, clamped into range) and whether it lies inside.
struct Tap {
  std::vector<NodeRef> idx;
  NodeRef inside;                // Bool
  NodeRef weight;                // of the tap; null for nearest
  std::vector<NodeRef> dweight;  // d weight / d coordinate, per spatial dim (bilinear, bicubic)
};

struct Problem {
  Tensor input;           // (N, C, in...)
  std::vector<Tensor> g;  // per spatial dim (D, H, W order): the grid's coordinate, (N, 1, out...)
  Interp interp;
  Coords co;
  Shape full;  // (N, C, out...)
  int64_t nd;
};

int64_t in_size(const Problem& p, int64_t d) { return p.input.size(2 + d); }

// An integer coordinate from a (floored or rounded) real one: its tap index clamped into
// the input and whether it was inside, both expanded to the full shape.
void locate(const Problem& p, const NodeRef& real, int64_t d, NodeRef* idx, NodeRef* inside) {
  const Shape& s = real->shape;
  int64_t n = in_size(p, d);
  NodeRef i = cast(real, DType::Int64);
  NodeRef ok = land(binary(Op::Ge, i, int_const(0, s)), binary(Op::Lt, i, int_const(n, s)));
  // A NaN or huge coordinate converts to anything; the clamp keeps the gather in bounds.
  NodeRef c = binary(Op::Minimum, binary(Op::Maximum, i, int_const(0, s)), int_const(n - 1, s));
  *idx = expand(c, p.full);
  *inside = expand(ok, p.full);
}

// Every tap of every output element, in the CPU's order (the last spatial dim fastest).
// `mult` gets each dim's d coordinate / d grid (bilinear and bicubic).
std::vector<Tap> taps_of(const Problem& p, std::vector<NodeRef>* mult) {
  const Coords& co = p.co;
  std::vector<Tap> out;
  if (mult) mult->assign(size_t(p.nd), NodeRef());
  std::vector<NodeRef> x(size_t(p.nd));
  for (int64_t d = 0; d < p.nd; ++d) {
    NodeRef g = read_tensor(p.g[size_t(d)]);
    NodeRef* m = mult ? &(*mult)[size_t(d)] : nullptr;
    if (p.interp == Interp::Bicubic) {
      x[size_t(d)] = co.unnormalize(g, in_size(p, d));  // padding applies per tap
      if (m) *m = co.k(co.unnormalize_grad(in_size(p, d)));
    } else {
      x[size_t(d)] = co.source(g, in_size(p, d), m);
    }
  }
  if (p.interp == Interp::Nearest) {
    Tap t;
    for (int64_t d = 0; d < p.nd; ++d) {
      NodeRef idx, inside;
      locate(p, co.round(x[size_t(d)]), d, &idx, &inside);
      t.idx.push_back(idx);
      t.inside = t.inside ? land(t.inside, inside) : inside;
    }
    out.push_back(t);
    return out;
  }
  // Per dim, the taps' integer positions (as reals), weights and weight derivatives.
  struct Dim {
    std::vector<NodeRef> pos, w, dw;
  };
  std::vector<Dim> dims(size_t(p.nd));
  for (int64_t d = 0; d < p.nd; ++d) {
    Dim& dm = dims[size_t(d)];
    NodeRef xd = x[size_t(d)];
    NodeRef lo = unary(Op::Floor, xd);
    if (p.interp == Interp::Bilinear) {
      NodeRef hi = add(lo, co.k(1));
      dm.pos = {lo, hi};
      if (co.vec) {  // w = x - x_w, e = 1 - w
        NodeRef f = sub(xd, lo);
        dm.w = {sub(co.k(1), f), f};
      } else {  // (ix_bse - ix), (ix - ix_tnw)
        dm.w = {sub(hi, xd), sub(xd, lo)};
      }
      dm.dw = {co.k(-1), co.k(1)};
    } else {
      // The cubic convolution kernel (A = -0.75) at distances 1 + t, t, 1 - t, 2 - t, and its
      // derivative in t, as the vectorized kernel writes them.
      NodeRef t = sub(xd, lo);
      const double A = -0.75;
      auto k = [&](double v) { return co.k(v); };
      auto far = [&](const NodeRef& z) {
        return sub(mul(add(mul(sub(mul(k(A), z), k(5 * A)), z), k(8 * A)), z), k(4 * A));
      };
      auto near = [&](const NodeRef& z) {
        return add(mul(mul(sub(mul(k(A + 2), z), k(A + 3)), z), z), k(1));
      };
      NodeRef u = sub(k(1), t);
      dm.w = {far(add(t, k(1))), near(t), near(u), far(sub(k(2), t))};
      NodeRef z0 = sub(k(-1), t), z1 = sub(k(0), t), z3 = sub(k(2), t);
      // The CPU subtracts val * coeff_grad: the coefficients' derivatives in t are these
      // negated.
      dm.dw = {sub(mul(sub(mul(mul(k(-3), k(A)), z0), k(10 * A)), z0), k(8 * A)),
               mul(sub(mul(mul(k(-3), k(A + 2)), z1), mul(k(2), k(A + 3))), z1),
               mul(sub(mul(mul(k(3), k(A + 2)), u), mul(k(2), k(A + 3))), u),
               add(mul(sub(mul(mul(k(3), k(A)), z3), k(10 * A)), z3), k(8 * A))};
      for (NodeRef& v : dm.dw) v = unary(Op::Neg, v);
      for (int j = -1; j <= 2; ++j) dm.pos.push_back(add(lo, k(j)));
    }
  }
  std::vector<size_t> at(size_t(p.nd), 0);
  while (true) {
    Tap t;
    for (int64_t d = 0; d < p.nd; ++d) {
      NodeRef pos = dims[size_t(d)].pos[at[size_t(d)]];
      if (p.interp == Interp::Bicubic) pos = co.pad_coordinate(pos, in_size(p, d), nullptr);
      NodeRef idx, inside;
      locate(p, pos, d, &idx, &inside);
      t.idx.push_back(idx);
      t.inside = t.inside ? land(t.inside, inside) : inside;
    }
    // The weight: a product over dims, outermost first in the 2-d kernel (nw = s * e),
    // innermost first in the 3-d one (tnw = x * y * z); bicubic's is coeff_x * coeff_y.
    std::vector<int64_t> order;
    for (int64_t d = 0; d < p.nd; ++d)
      order.push_back(co.vec && p.interp != Interp::Bicubic ? d : p.nd - 1 - d);
    for (int64_t d : order) {
      const NodeRef& w = dims[size_t(d)].w[at[size_t(d)]];
      t.weight = t.weight ? mul(t.weight, w) : w;
    }
    for (int64_t d = 0; d < p.nd; ++d) {
      NodeRef dw = dims[size_t(d)].dw[at[size_t(d)]];
      for (int64_t e : order)
        if (e != d) dw = mul(dw, dims[size_t(e)].w[at[size_t(e)]]);
      t.dweight.push_back(dw);
    }
    out.push_back(t);
    size_t j = size_t(p.nd);
    while (j > 0 && ++at[j - 1] == dims[j - 1].pos.size()) at[--j] = 0;
    if (j == 0) break;
  }
  return out;
}

std::vector<NodeRef> full_coords(const Problem& p, const Tap& t) {
  std::vector<NodeRef> c = {iota(DType::Int64, p.full, 0), iota(DType::Int64, p.full, 1)};
  c.insert(c.end(), t.idx.begin(), t.idx.end());
  return c;
}

// The tap's input value, 0 outside the input.
NodeRef tap_value(const Problem& p, const Tap& t) {
  return where(t.inside, gather_at(p.input, full_coords(p, t)), scalar(0, p.co.t, p.full));
}

NodeRef full(const Problem& p, const NodeRef& v) { return expand(v, p.full); }

const char* kernel_name(int64_t nd, bool backward) {
  if (nd == 2) return backward ? "grid_sampler_2d_backward_cpu" : "grid_sampler_2d_cpu";
  return backward ? "grid_sampler_3d_backward_cpu" : "grid_sampler3d_cpu";
}

// The CPU's checks and dtype rules, then the problem's nodes-to-be.
Problem setup(const Tensor& input, const Tensor& grid, int64_t interp, int64_t pad, bool align,
              int64_t nd, bool backward) {
  at::native::check_grid_sampler_common(input, grid);
  if (nd == 2)
    at::native::check_grid_sampler_2d(input, grid);
  else
    at::native::check_grid_sampler_3d(input, grid, interp);
  c10::ScalarType st = input.scalar_type();
  // Which dtypes each CPU kernel takes is the running torch's (2.x's take float16 and
  // bfloat16): one verdict table per op, from the op on a probe.
  static const CpuVerdicts verdicts[2][2];
  verdicts[nd == 3][backward].check(st, grid.scalar_type(), [&] {
    const auto in = at::TensorOptions().dtype(st),
               gr = at::TensorOptions().dtype(grid.scalar_type());
    std::vector<int64_t> is(size_t(nd + 2), 1), gs(size_t(nd + 2), 1);
    gs.back() = nd;
    Tensor x = at::ones(is, in), g = at::zeros(gs, gr);
    if (!backward) {
      (nd == 2 ? at::grid_sampler_2d : at::grid_sampler_3d)(x, g, 0, 0, false);
    } else if (nd == 2) {
      at::grid_sampler_2d_backward(at::ones(is, in), x, g, 0, 0, false, {true, true});
    } else {
      at::grid_sampler_3d_backward(at::ones(is, in), x, g, 0, 0, false, {true, true});
    }
  });
  TORCH_CHECK(at::isFloatingType(st), kernel_name(nd, backward), " not implemented for ", st);
  TORCH_CHECK(grid.scalar_type() == st, "expected scalar type ", st, " but found ",
              grid.scalar_type());
  TORCH_CHECK(interp >= 0 && interp <= 2, "grid_sampler(): unknown interpolation mode ", interp);
  TORCH_CHECK(pad >= 0 && pad <= 2, "grid_sampler(): unknown padding mode ", pad);
  Problem p;
  p.input = input;
  p.interp = Interp(interp);
  p.nd = nd;
  std::vector<int64_t> full = {input.size(0), input.size(1)};
  for (int64_t d = 0; d < nd; ++d) full.push_back(grid.size(1 + d));
  p.full = shape_of(full);
  Shape s = p.full;
  s[1] = 1;
  p.co = Coords{to_loom(st), s, Pad(pad), align, nd == 2};
  // Spatial dim d (D, H, W order) reads grid coordinate nd - 1 - d (x is W).
  for (int64_t d = 0; d < nd; ++d) p.g.push_back(grid.select(-1, nd - 1 - d).unsqueeze(1));
  return p;
}

Tensor grid_sampler(const Tensor& input, const Tensor& grid, int64_t interp, int64_t pad,
                    bool align, int64_t nd) {
  check_operands(nd == 2 ? "grid_sampler_2d" : "grid_sampler_3d", {input, grid});
  Problem p = setup(input, grid, interp, pad, align, nd, false);
  Tensor out = empty_loom(p.full, input.scalar_type());
  if (out.numel() == 0) return out;
  EngineLock lock(engine_mutex());
  NodeRef sum;
  for (const Tap& t : taps_of(p, nullptr)) {
    NodeRef v = t.weight ? mul(tap_value(p, t), full(p, t.weight)) : tap_value(p, t);
    sum = sum ? add(sum, v) : v;
  }
  assign(out, sum);
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_backward(const Tensor& grad_out, const Tensor& input,
                                                 const Tensor& grid, int64_t interp, int64_t pad,
                                                 bool align, std::array<bool, 2> mask, int64_t nd) {
  check_operands(nd == 2 ? "grid_sampler_2d_backward" : "grid_sampler_3d_backward",
                 {grad_out, input, grid});
  Problem p = setup(input, grid, interp, pad, align, nd, true);
  TORCH_CHECK(grad_out.scalar_type() == input.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", grad_out.scalar_type());
  TORCH_CHECK(grad_out.sizes() == at::IntArrayRef(p.full),
              "grid_sampler(): expected grad_output of sizes ", at::IntArrayRef(p.full),
              " but got ", grad_out.sizes());
  Tensor grad_grid = empty_loom(grid.sizes(), grid.scalar_type());
  std::vector<Tensor> grad_grid_at;  // per spatial dim, as (N, 1, out...)
  for (int64_t d = 0; d < nd; ++d)
    grad_grid_at.push_back(grad_grid.select(-1, nd - 1 - d).unsqueeze(1));
  Tensor grad_input;
  EngineLock lock(engine_mutex());
  if (mask[0]) {
    grad_input = empty_loom(input.sizes(), input.scalar_type());
    assign(grad_input, scalar(0, p.co.t, shape_of(input.sizes())));
  }
  const DType t = p.co.t;
  if (grad_out.numel() == 0 || p.interp == Interp::Nearest) {
    if (grad_grid.numel() > 0) assign(grad_grid, scalar(0, t, shape_of(grid.sizes())));
    if (grad_out.numel() == 0 || !mask[0]) return {grad_input, grad_grid};
  }
  std::vector<NodeRef> mult;
  std::vector<Tap> taps = taps_of(p, p.interp == Interp::Nearest ? nullptr : &mult);
  NodeRef g = read_tensor(grad_out);
  if (mask[0])
    for (const Tap& tp : taps) {
      NodeRef v = tp.weight ? mul(full(p, tp.weight), g) : g;
      scatter_add_at(grad_input, where(tp.inside, v, scalar(0, t, p.full)), full_coords(p, tp));
    }
  if (p.interp == Interp::Nearest) return {grad_input, grad_grid};
  // d out / d coordinate: each tap's value times its weight's derivative, summed over taps
  // and channels, times d coordinate / d grid.
  for (int64_t d = 0; d < nd; ++d) {
    NodeRef sum;
    for (const Tap& tp : taps) {
      NodeRef v = mul(mul(tap_value(p, tp), full(p, tp.dweight[size_t(d)])), g);
      sum = sum ? add(sum, v) : v;
    }
    NodeRef total = reduce(ReduceKind::Sum, sum, {1}, t);
    assign(grad_grid_at[size_t(d)], mul(total, mult[size_t(d)]));
  }
  return {grad_input, grad_grid};
}

Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interp, int64_t pad,
                       bool align) {
  return grid_sampler(input, grid, interp, pad, align, 2);
}
Tensor grid_sampler_3d(const Tensor& input, const Tensor& grid, int64_t interp, int64_t pad,
                       bool align) {
  return grid_sampler(input, grid, interp, pad, align, 3);
}
std::tuple<Tensor, Tensor> grid_sampler_2d_backward(const Tensor& grad_out, const Tensor& input,
                                                    const Tensor& grid, int64_t interp, int64_t pad,
                                                    bool align, std::array<bool, 2> mask) {
  return grid_sampler_backward(grad_out, input, grid, interp, pad, align, mask, 2);
}
std::tuple<Tensor, Tensor> grid_sampler_3d_backward(const Tensor& grad_out, const Tensor& input,
                                                    const Tensor& grid, int64_t interp, int64_t pad,
                                                    bool align, std::array<bool, 2> mask) {
  return grid_sampler_backward(grad_out, input, grid, interp, pad, align, mask, 3);
}
// The scalar version's backward (a CompositeImplicitAutograd op over data pointers).
std::tuple<Tensor, Tensor> grid_sampler_2d_fallback_backward(const Tensor& grad_out,
                                                             const Tensor& input,
                                                             const Tensor& grid, int64_t interp,
                                                             int64_t pad, bool align) {
  return grid_sampler_backward(grad_out, input, grid, interp, pad, align, {true, true}, 2);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler_2d));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler_3d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_2d_backward));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_3d_backward));
  // The CPU's scalar version of the 2-d kernel (for inputs past 32-bit offsets), exposed for
  // testing: here the same kernel. Its backward's composite reads data pointers, which Loom
  // storages are not; see the Autograd registration below.
  m.impl("_grid_sampler_2d_cpu_fallback", TORCH_FN(grid_sampler_2d));
  m.impl("_grid_sampler_2d_cpu_fallback_backward", TORCH_FN(grid_sampler_2d_fallback_backward));
}

// A PrivateUse1 kernel hides a CompositeImplicitAutograd op's composite from autograd too; the
// op is itself a backward (not differentiable), so autograd passes straight through to it.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_grid_sampler_2d_cpu_fallback_backward", torch::CppFunction::makeFallthrough());
}

}  // namespace loom::aten
