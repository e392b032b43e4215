"""A short tour of the engine for `make test-asan`, which runs it against the extension built
with AddressSanitizer and UndefinedBehaviorSanitizer; `make test` runs it as it is."""
import copy

import pytest
import torch

import loom

D = loom.device


def test_elementwise_reductions_views_and_writes():
    a = torch.randn(37, 19)
    x = a.to(D)
    torch.testing.assert_close(((x * 2 - 1).exp().sum(1)).cpu(), (a * 2 - 1).exp().sum(1))
    torch.testing.assert_close(x.t()[3:9:2].amax(0).cpu(), a.t()[3:9:2].amax(0))
    y, b = x.clone(), a.clone()
    for i in range(40):
        y[i % 37, i % 19] += i
        b[i % 37, i % 19] += i
    y[:, 4].mul_(-1)
    b[:, 4].mul_(-1)
    torch.testing.assert_close(y.cpu(), b)
    torch.testing.assert_close(torch.softmax(y, 1).cpu(), torch.softmax(b, 1))
    torch.testing.assert_close((y @ y.t()).cpu(), b @ b.t(), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(torch.cumsum(y, 0).cpu(), torch.cumsum(b, 0), rtol=1e-4,
                               atol=1e-4)


def test_indexing_and_faults():
    a = torch.arange(60.).reshape(6, 10)
    x = a.to(D)
    idx = torch.tensor([5, 0, 3, 3])
    torch.testing.assert_close(x[idx.to(D)].cpu(), a[idx])
    torch.testing.assert_close(x.gather(1, idx.view(1, 4).expand(6, 4).to(D)).cpu(),
                               a.gather(1, idx.view(1, 4).expand(6, 4)))
    with pytest.raises(IndexError):
        x[torch.tensor([7]).to(D)].cpu()
    with pytest.raises(RuntimeError):
        x.gather(1, torch.tensor([[10]]).to(D)).cpu()
    torch.testing.assert_close(x.sum().cpu(), a.sum())  # still usable


def test_training_steps():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    model = model.to(D)
    opt = torch.optim.Adam(model.parameters(), foreach=True)
    x, t = torch.randn(32, 8).to(D), torch.randint(0, 3, (32,)).to(D)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), t)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert loom.metrics()["live_buffers"] > 0


def test_conv_batchnorm_pool_step():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
                              torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(8 * 4 * 4, 3))
    x, t = torch.randn(6, 3, 8, 8), torch.randint(0, 3, (6,))
    results = {}
    for dev in ("cpu", D):
        m = copy.deepcopy(net).to(dev)
        loss = torch.nn.functional.cross_entropy(m(x.to(dev)), t.to(dev))
        loss.backward()
        results[dev] = (loss.cpu(), m[0].weight.grad.cpu())
    torch.testing.assert_close(results[D][0], results["cpu"][0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(results[D][1], results["cpu"][1], rtol=1e-3, atol=1e-4)


def test_host_side_selection_and_counting():
    """The ops that work on the host over realized memory: mask compaction, histc and
    bincount counts, median/kthvalue/mode selection (rows across the pool)."""
    g = torch.Generator().manual_seed(2)
    a = torch.randn(300, 250, generator=g)
    x = a.to(D)
    assert torch.equal(x[x > 0.3].cpu(), a[a > 0.3])
    torch.testing.assert_close(torch.histc(x, 17).cpu(), torch.histc(a, 17))
    labels = torch.randint(0, 50, (70_000,), generator=g)
    assert torch.equal(torch.bincount(labels.to(D)).cpu(), torch.bincount(labels))
    for fn in (lambda t: t.median(1), lambda t: t.kthvalue(7, 0), lambda t: t.round().mode(1)):
        for got, want in zip(fn(x), fn(a)):
            assert torch.equal(got.cpu(), want)
    src = torch.randn(700, 64, generator=g)
    idx = torch.randint(0, 90, (700,), generator=g)
    want = torch.zeros(90, 64).index_add_(0, idx, src, alpha=2)
    got = torch.zeros(90, 64, device=D).index_add_(0, idx.to(D), src.to(D), alpha=2)
    assert torch.equal(got.cpu(), want)
    torch.testing.assert_close(torch.atan2(x, x.t().contiguous().t()).sin().cpu(),
                               torch.atan2(a, a).sin())
    # nonzero's branch-free columns, sorted unique by table and by radix sort, a scatter
    # split across threads after its check pass
    assert torch.equal((x > 0.3).nonzero().cpu(), (a > 0.3).nonzero())
    many = torch.randint(-10**9, 10**9, (90_000,), generator=g)
    for t in (labels, many):
        for got, want in zip(torch.unique(t.to(D), return_inverse=True, return_counts=True),
                             torch.unique(t, return_inverse=True, return_counts=True)):
            assert torch.equal(got.cpu(), want)
    cols = torch.randint(0, 250, (300, 250), generator=g)
    assert torch.equal(torch.zeros(300, 250, device=D).scatter_add_(1, cols.to(D), x).cpu(),
                       torch.zeros(300, 250).scatter_add_(1, cols, a))
