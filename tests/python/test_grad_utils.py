"""cumsum's backward and clip_grad_norm_ run on Loom (no fallback) and equal CPU."""
import pytest
import torch

import loom

D = loom.device


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_backward(dim):
    x = sample((4, 5, 3), 1)
    w = sample((5, 4, 3), 2)
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        loom.reset_metrics()
        y = xs.transpose(0, 1).cumsum(dim)  # a strided input
        (y * w.to(dev)).sum().backward()
        outs.append((y.detach().cpu(), xs.grad.cpu()))
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*outs):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm(norm_type):
    results = []
    for dev in ("cpu", D):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)).to(dev)
        net(sample((4, 6), 3).to(dev)).pow(2).sum().backward()
        loom.reset_metrics()
        total = torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5, norm_type=norm_type)
        results.append([total.cpu()] + [p.grad.cpu() for p in net.parameters()])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
