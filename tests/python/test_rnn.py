"""LSTM and GRU layers, and the fused cell ops that torch 2.x steps them with on devices
other than the CPU (csrc/aten/ops_rnn.cpp), against CPU torch: outputs, states, and the
gradients of the input and of every parameter."""
import copy

import pytest
import torch

import loom

D = loom.device


def sample(*shape, seed=0, dtype=torch.float32):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_layers_match_cpu(cls, bias, layers, bidirectional):
    torch.manual_seed(0)
    cpu = cls(4, 5, num_layers=layers, bidirectional=bidirectional, bias=bias, batch_first=True)
    lm = copy.deepcopy(cpu).to(D)
    x = sample(3, 6, 4, seed=1)
    xc, xl = x.clone().requires_grad_(), x.to(D).requires_grad_()
    loom.reset_metrics()
    (yc, hc), (yl, hl) = cpu(xc), lm(xl)
    w = sample(*yc.shape, seed=2)
    (yc * w).sum().backward()
    (yl * w.to(D)).sum().backward()
    assert loom.metrics()["fallbacks"] == {}
    tol = dict(rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(yl.detach().cpu(), yc.detach(), **tol)
    for a, b in zip(hl if isinstance(hl, tuple) else (hl,), hc if isinstance(hc, tuple) else (hc,)):
        torch.testing.assert_close(a.detach().cpu(), b.detach(), **tol)
    torch.testing.assert_close(xl.grad.cpu(), xc.grad, **tol)
    for p, q in zip(cpu.parameters(), lm.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, **tol)


def gates(n, h, k, seed):
    return [sample(n, k * h, seed=seed + j) for j in range(2)] + [sample(k * h, seed=seed + j)
                                                                   for j in (2, 3)]


def lstm_reference(ig, hg, cx, ib, hb):
    g = ig + hg + (ib + hb if ib is not None else 0)
    i, f, c, o = g.chunk(4, 1)
    i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
    cy = f * cx + i * c
    return o * cy.tanh(), cy


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_fused_lstm_cell(bias, dtype):
    ig, hg, ib, hb = (t.to(dtype) for t in gates(3, 5, 4, seed=3))
    if not bias:
        ib = hb = None
    cx = sample(3, 5, seed=9, dtype=dtype)
    on = lambda t: None if t is None else t.to(D)  # noqa: E731
    hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(on(ig), on(hg), on(cx), on(ib), on(hb))
    args = [t.double() if t is not None else None for t in (ig, hg, cx, ib, hb)]
    want_hy, want_cy = lstm_reference(*args)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-6)
    assert (hy.dtype, ws.shape) == (dtype, ig.shape)
    torch.testing.assert_close(hy.cpu().double(), want_hy, **tol)
    torch.testing.assert_close(cy.cpu().double(), want_cy, **tol)
    # the backward of the fused cell against the CPU's composite one
    ghy, gcy = sample(3, 5, seed=10, dtype=dtype), sample(3, 5, seed=11, dtype=dtype)
    got = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(on(ghy), on(gcy), on(cx), cy, ws,
                                                             bias)
    want = torch.ops.aten._thnn_differentiable_lstm_cell_backward(ghy, gcy, ig, hg, ib, hb, cx,
                                                         cy.cpu())
    # want: the input and hidden gates' gradients (equal), cx's, and the two biases'
    torch.testing.assert_close(got[0].cpu(), want[0], **tol)
    torch.testing.assert_close(got[1].cpu(), want[2], **tol)
    if bias:
        torch.testing.assert_close(got[2].cpu(), want[3], **tol)
    else:
        assert got[2] is None and want[3] is None
    one = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(None, on(gcy), on(cx), cy, ws, bias)
    want = torch.ops.aten._thnn_differentiable_lstm_cell_backward(None, gcy, ig, hg, ib, hb, cx, cy.cpu())
    torch.testing.assert_close(one[0].cpu(), want[0], **tol)


@pytest.mark.parametrize("bias", [True, False])
def test_fused_gru_cell(bias):
    ig, hg, ib, hb = gates(3, 5, 3, seed=12)
    if not bias:
        ib = hb = None
    hx = sample(3, 5, seed=16)
    on = lambda t: None if t is None else t.to(D)  # noqa: E731
    hy, ws = torch.ops.aten._thnn_fused_gru_cell(on(ig), on(hg), on(hx), on(ib), on(hb))
    ir, iz, in_ = (ig + (ib if bias else 0)).chunk(3, 1)
    hr, hz, hn = (hg + (hb if bias else 0)).chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    torch.testing.assert_close(hy.cpu(), (1 - z) * n + z * hx, rtol=1e-5, atol=1e-6)
    assert ws.shape == (3, 25)
    ghy = sample(3, 5, seed=17)
    got = torch.ops.aten._thnn_fused_gru_cell_backward(ghy.to(D), ws, bias)
    want = torch.ops.aten._thnn_differentiable_gru_cell_backward(ghy, ig, hg, hx, ib, hb)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-6)


def test_fused_cell_errors():
    ig, hg, ib, hb = gates(3, 5, 4, seed=20)
    with pytest.raises(RuntimeError, match="previous state"):
        torch.ops.aten._thnn_fused_lstm_cell(ig.to(D), hg.to(D), torch.zeros(3, 4, device=D))
    with pytest.raises(RuntimeError, match="hidden_gates"):
        torch.ops.aten._thnn_fused_lstm_cell(ig.to(D), hg[:, :8].to(D), torch.zeros(3, 5, device=D))
    with pytest.raises(RuntimeError, match="workspace"):
        torch.ops.aten._thnn_fused_gru_cell_backward(torch.zeros(3, 5, device=D),
                                            torch.zeros(3, 20, device=D), False)
