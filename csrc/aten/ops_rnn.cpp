// The fused LSTM and GRU cells. torch 2.x steps LSTM and GRU layers of every device but the
// CPU through _thnn_fused_lstm_cell / _thnn_fused_gru_cell and their backwards (its cell
// code takes the fused path for CUDA, XPU and PrivateUse1 inputs), which PyTorch has
// kernels for on CUDA only: without these nn.LSTM and nn.GRU raised on Loom, the CPU
// fallback having nothing to run. Here each cell is composed of Loom's elementwise ops (the
// gates' activations and the state update fuse), with the CUDA kernels' formulas and the
// same workspace layout: LSTM (i, f, g, o) activated, GRU (r, z, n, hx, hn + b_hn). A
// float16 or bfloat16 cell computes in float and rounds its outputs once, as CUDA's
// kernels do. torch 1.13 reaches none of these (its fused path is CUDA's only).
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_util.h"

namespace loom::aten {

namespace {

using at::Tensor;
using OptTensor = c10::optional<Tensor>;

// In float for a reduced float (the CUDA kernels' accscalar_t), else as is.
Tensor up(const Tensor& t) {
  const auto s = t.scalar_type();
  return s == at::kHalf || s == at::kBFloat16 ? t.to(at::kFloat) : t;
}

// The CUDA kernels' size checks: 2-d gates of `factor` times the state's width, biases of
// the gates' width, and a state of the gates' rows.
void check_cell(const char* op, const Tensor& ig, const Tensor& hg, const OptTensor& ib,
                const OptTensor& hb, int64_t factor, const Tensor& state) {
  check_operands(op, {ig, hg, state});
  TORCH_CHECK(ig.dim() == 2, op, ": Expected input_gates to be 2-D, but got ", ig.dim(), "-D");
  TORCH_CHECK(hg.sizes() == ig.sizes(), op, ": Expected hidden_gates of size ", ig.sizes(),
              ", but got ", hg.sizes());
  TORCH_CHECK(has(ib) == has(hb), op, ": expected both biases or neither");
  if (has(ib)) {
    TORCH_CHECK(ib->dim() == 1 && ib->size(0) == ig.size(1) && hb->sizes() == ib->sizes(), op,
                ": Expected biases of size [", ig.size(1), "], but got ", ib->sizes(), " and ",
                hb->sizes());
  }
  TORCH_CHECK(
      state.dim() == 2 && state.size(0) == ig.size(0) && state.size(1) * factor == ig.size(1), op,
      ": Expected the previous state of size [", ig.size(0), ", ", ig.size(1) / factor,
      "], but got ", state.sizes());
  TORCH_CHECK(at::isFloatingType(ig.scalar_type()), op, " not implemented for '",
              c10::toString(ig.scalar_type()), "'");
}

std::tuple<Tensor, Tensor, Tensor> lstm_cell(const Tensor& ig, const Tensor& hg, const Tensor& cx,
                                             const OptTensor& ib, const OptTensor& hb) {
  check_cell("_thnn_fused_lstm_cell", ig, hg, ib, hb, 4, cx);
  const auto t = ig.scalar_type();
  Tensor gates = up(ig) + up(hg);
  if (has(ib)) gates = gates + up(*ib) + up(*hb);
  std::vector<Tensor> c = gates.chunk(4, 1);
  Tensor i = at::sigmoid(c[0]), f = at::sigmoid(c[1]), g = at::tanh(c[2]), o = at::sigmoid(c[3]);
  Tensor cy = f * up(cx) + i * g;
  Tensor hy = o * at::tanh(cy);
  return {hy.to(t), cy.to(t), at::cat({i, f, g, o}, 1).to(t)};
}

// (grad_gates, grad_cx, grad_bias); an undefined gradient counts as zeros.
std::tuple<Tensor, Tensor, Tensor> lstm_cell_backward(const OptTensor& grad_hy,
                                                      const OptTensor& grad_cy, const Tensor& cx,
                                                      const Tensor& cy, const Tensor& workspace,
                                                      bool has_bias) {
  if (!has(grad_hy) && !has(grad_cy)) return {};
  check_operands("_thnn_fused_lstm_cell_backward_impl", {cx, cy, workspace});
  const Tensor& defined = has(grad_hy) ? *grad_hy : *grad_cy;
  TORCH_CHECK(defined.dim() == 2 && cx.sizes() == defined.sizes() &&
                  cy.sizes() == defined.sizes() &&
                  (!has(grad_cy) || grad_cy->sizes() == defined.sizes()) && workspace.dim() == 2 &&
                  workspace.numel() == 4 * defined.numel(),
              "fused_lstm_cell_backward: expected gradients, cx and cy of one 2-d size and a "
              "workspace of four times its elements");
  const auto t = workspace.scalar_type();
  std::vector<Tensor> w = up(workspace).chunk(4, 1);
  const Tensor &i = w[0], &f = w[1], &g = w[2], &o = w[3];
  Tensor tc = at::tanh(up(cy));
  Tensor gog = has(grad_hy) ? up(*grad_hy) * tc : at::zeros_like(tc);
  Tensor gcx = has(grad_hy) ? up(*grad_hy) * o * (1 - tc * tc) : at::zeros_like(tc);
  if (has(grad_cy)) gcx = gcx + up(*grad_cy);
  Tensor gig = gcx * g * (1 - i) * i;
  Tensor gfg = gcx * up(cx) * (1 - f) * f;
  Tensor gcg = gcx * i * (1 - g * g);
  gog = gog * (1 - o) * o;
  Tensor grad_gates = at::cat({gig, gfg, gcg, gog}, 1).to(t);
  Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {grad_gates, (gcx * f).to(t), grad_bias};
}

std::tuple<Tensor, Tensor> gru_cell(const Tensor& ig, const Tensor& hg, const Tensor& hx,
                                    const OptTensor& ib, const OptTensor& hb) {
  check_cell("_thnn_fused_gru_cell", ig, hg, ib, hb, 3, hx);
  const auto t = ig.scalar_type();
  std::vector<Tensor> i = up(ig).chunk(3, 1), h = up(hg).chunk(3, 1);
  Tensor r_in = i[0] + h[0], z_in = i[1] + h[1], n_in = i[2], hn = h[2];
  if (has(ib)) {
    std::vector<Tensor> b1 = up(*ib).chunk(3), b2 = up(*hb).chunk(3);
    r_in = r_in + b1[0] + b2[0];
    z_in = z_in + b1[1] + b2[1];
    n_in = n_in + b1[2];
    hn = hn + b2[2];
  }
  Tensor r = at::sigmoid(r_in), z = at::sigmoid(z_in);
  Tensor n = at::tanh(n_in + r * hn);
  Tensor hx_ = up(hx);
  Tensor hy = n + z * (hx_ - n);
  return {hy.to(t), at::cat({r, z, n, hx_, hn}, 1).to(t)};
}

// (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias)
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gru_cell_backward(const Tensor& grad_hy,
                                                                     const Tensor& workspace,
                                                                     bool has_bias) {
  check_operands("_thnn_fused_gru_cell_backward", {grad_hy, workspace});
  TORCH_CHECK(grad_hy.dim() == 2 && workspace.dim() == 2 && workspace.size(0) == grad_hy.size(0) &&
                  workspace.size(1) == 5 * grad_hy.size(1),
              "fused_gru_cell_backward: expected a 2-d grad_hy and a workspace of its rows and "
              "five times its columns, but got ",
              grad_hy.sizes(), " and ", workspace.sizes());
  const auto t = workspace.scalar_type();
  std::vector<Tensor> w = up(workspace).chunk(5, 1);
  const Tensor &r = w[0], &z = w[1], &n = w[2], &hx = w[3], &hn = w[4];
  Tensor go = up(grad_hy);
  Tensor gz = go * (hx - n) * (1 - z) * z;
  Tensor ghx = go * z;
  Tensor gn = go * (1 - z) * (1 - n * n);
  Tensor ghn = gn * r;
  Tensor gr = gn * hn * (1 - r) * r;
  Tensor gi = at::cat({gr, gz, gn}, 1).to(t), gh = at::cat({gr, gz, ghn}, 1).to(t);
  Tensor gib, ghb;
  if (has_bias) {
    gib = gi.sum(0);
    ghb = gh.sum(0);
  }
  return {gi, gh, ghx.to(t), gib, ghb};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace loom::aten
