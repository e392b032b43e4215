"""Losses and activation backward ops that training calls, forward and backward, against
CPU torch; and an optimizer step with foreach=True."""
import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def sample(shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def grads_match(fn, *inputs, tol=1e-5, wrt=(0,)):
    """fn(*inputs) forward and d/dinputs[wrt] of a weighted sum, CPU vs Loom."""
    results = []
    for dev in ("cpu", D):
        xs = [t.detach().to(dev).requires_grad_(i in wrt) if isinstance(t, torch.Tensor) else t
              for i, t in enumerate(inputs)]
        out = fn(*xs)
        w = sample(tuple(out.shape), seed=99, dtype=out.dtype).to(dev)
        (out * w).sum().backward()
        results.append((out.detach().cpu(), [x.grad.cpu() for x in xs
                                             if isinstance(x, torch.Tensor) and x.requires_grad]))
    (out_c, g_c), (out_l, g_l) = results
    torch.testing.assert_close(out_l, out_c, rtol=tol, atol=tol, equal_nan=True)
    for a, b in zip(g_l, g_c):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol, equal_nan=True)


TARGET = torch.tensor([1, 0, 4, 4, 2, 3])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 4])
def test_nll_loss(reduction, weighted, ignore_index):
    loom.reset_metrics()
    w = sample((5,), seed=2).abs() if weighted else None
    grads_match(lambda x, t, w: F.nll_loss(F.log_softmax(x, 1), t, weight=w, reduction=reduction,
                                           ignore_index=ignore_index),
                sample((6, 5), seed=1), TARGET, w)
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy(smoothing):
    loom.reset_metrics()
    grads_match(lambda x, t: F.cross_entropy(x, t, label_smoothing=smoothing), sample((6, 5), seed=3), TARGET)
    grads_match(lambda x, p: F.cross_entropy(x, p, label_smoothing=smoothing), sample((6, 5), seed=4),
                sample((6, 5), seed=5).softmax(1), wrt=(0, 1))
    assert loom.metrics()["fallbacks"] == {}


def test_nll_loss_one_sample_and_errors():
    grads_match(lambda x, t: F.nll_loss(x, t), sample((5,), seed=6), torch.tensor(3))
    x = sample((6, 5), seed=7)
    for bad in (torch.tensor([1, 0, 9, 4, 2, 3]), torch.tensor([1, 0, -1, 4, 2, 3])):
        with pytest.raises(Exception) as want:
            F.nll_loss(x, bad)
        with pytest.raises(type(want.value), match="out of bounds"):
            F.nll_loss(x.to(D), bad.to(D)).item()


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_backward(dim):
    loom.reset_metrics()
    grads_match(lambda x: F.softmax(x, dim), sample((6, 5), seed=8))
    grads_match(lambda x: F.log_softmax(x, dim), sample((6, 5), seed=9))
    assert loom.metrics()["fallbacks"] == {}


def test_relu_backward():
    loom.reset_metrics()
    x = sample((6, 5), seed=10)
    x[0, 0] = 0.0
    grads_match(torch.relu, x)
    grads_match(lambda x: F.threshold(x, 0.5, -1.0), x)
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
def test_optimizer_step_matches_cpu(opt):
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5))
    x, y = sample((8, 12), seed=11), torch.tensor([0, 1, 2, 3, 4, 0, 1, 2])
    losses = {}
    for dev in ("cpu", D):
        model = torch.nn.Sequential(*[m for m in base]).to(dev) if dev == "cpu" else None
        model = type(base)(*[type(m)(*([] if isinstance(m, torch.nn.ReLU) else [m.in_features, m.out_features]))
                             for m in base])
        model.load_state_dict(base.state_dict())
        model = model.to(dev)
        make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3, foreach=True),
                "adam": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
                "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=True)}[opt]
        o = make(model.parameters())
        loom.reset_metrics()
        out = []
        for _ in range(4):
            o.zero_grad()
            loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
            loss.backward()
            o.step()
            out.append(loss.item())
        losses[dev] = out
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    torch.testing.assert_close(torch.tensor(losses[D]), torch.tensor(losses["cpu"]), rtol=1e-4, atol=1e-5)
