"""Convolution forward and backward (input, weight, bias grads) against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def check(f, x, w, b=None, tol=1e-4):
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        ws = w.detach().to(dev).requires_grad_()
        bs = b.detach().to(dev).requires_grad_() if b is not None else None
        loom.reset_metrics()
        y = f(xs, ws, bs)
        (y * sample(tuple(y.shape), 99, y.dtype).to(dev)).sum().backward()
        outs.append([y.detach().cpu(), xs.grad.cpu(), ws.grad.cpu()] + ([bs.grad.cpu()] if b is not None else []))
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
            assert y.stride() == outs[0][0].stride()
    for want, got in zip(*outs):
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


CASES = {
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b), (2, 3, 8, 8), (4, 3, 3, 3), True),
    "conv2d_stride_pad": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), (2, 3, 9, 8), (4, 3, 3, 3), True),
    "conv2d_dilation_groups": (lambda x, w, b: F.conv2d(x, w, b, dilation=2, groups=2, padding=(1, 2)),
                               (2, 4, 9, 8), (6, 2, 3, 2), True),
    "conv2d_same": (lambda x, w, b: F.conv2d(x, w, b, padding="same"), (2, 3, 8, 8), (4, 3, 3, 3), True),
    "conv2d_depthwise": (lambda x, w, b: F.conv2d(x, w, b, groups=4, padding=1), (2, 4, 6, 6), (4, 1, 3, 3), False),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), (2, 3, 11), (5, 3, 3), True),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, padding=1), (1, 2, 4, 5, 4), (3, 2, 3, 3, 3), False),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         (2, 4, 5, 5), (4, 3, 3, 3), True),
    "conv_transpose1d_groups": (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=3, groups=2),
                                (2, 4, 5), (4, 2, 4), False),
    "conv_1x1": (lambda x, w, b: F.conv2d(x, w, b), (2, 8, 5, 5), (16, 8, 1, 1), True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_conv(name):
    f, xs, ws, bias = CASES[name]
    check(f, sample(xs, 1), sample(ws, 2), sample((ws[1] * (2 if "groups" in name else 1)
                                                    if "transpose" in name else ws[0],), 3) if bias else None)


def test_conv_float64_and_transposed_input():
    x, w = sample((2, 3, 6, 6), 4, torch.float64), sample((4, 3, 3, 3), 5, torch.float64)
    check(lambda x, w, b: F.conv2d(x.transpose(2, 3), w, padding=1), x, w, tol=1e-9)


def test_conv_errors_match_cpu():
    x, w = sample((2, 3, 8, 8), 6), sample((4, 2, 3, 3), 7)
    for f in (lambda x, w: F.conv2d(x, w), lambda x, w: F.conv2d(x, w[:, :, :1], stride=0),
              lambda x, w: F.conv2d(x[:, :, :1, :1], w.new_zeros(4, 3, 3, 3))):
        with pytest.raises(RuntimeError):
            f(x, w)
        with pytest.raises(RuntimeError):
            f(x.to(D), w.to(D))


def test_conv_layer_trains():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
    x, y = sample((4, 3, 6, 6), 8), torch.tensor([0, 1, 2, 3])
    losses = {}
    for dev in ("cpu", D):
        m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4))
        m.load_state_dict(net.state_dict())
        m = m.to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, foreach=True)
        out = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(m(x.to(dev)), y.to(dev))
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses[dev] = out
    torch.testing.assert_close(torch.tensor(losses[D]), torch.tensor(losses["cpu"]), rtol=1e-4, atol=1e-5)
