"""Ops that torch 2.x added and Loom has kernels for (torch 1.13 has no such schemas: these
tests skip there). Each is compared with the running CPU: values, dtypes, shapes, strides,
running statistics written in place, and errors."""
import pytest
import torch

import loom
from cpu_errors import outcome_like_cpu

D = loom.device
A = torch.ops.aten
TORCH_2 = int(torch.__version__.split(".")[0]) >= 2
pytestmark = pytest.mark.skipif(not TORCH_2, reason="ops of torch 2.x")


def sample(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def same(fn, *args):
    """fn on CPU and on Loom (its tensors moved there): the same outcome, no fallback."""
    loom.reset_metrics()
    outcome_like_cpu(lambda: fn(*args),
                     lambda: fn(*[a.to(D) if isinstance(a, torch.Tensor) else a for a in args]),
                     rtol=1e-4, atol=1e-5)
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("size,fill", [(2, -1), (6, -7), (0, 3), (-1, -1)])
def test_nonzero_static(size, fill):
    x = torch.tensor([[0, 1], [2, 0], [3, 3]])
    same(lambda t: torch.nonzero_static(t, size=size, fill_value=fill), x)
    same(lambda t: torch.nonzero_static(t, size=size), torch.tensor(3.0))
    same(lambda t: torch.nonzero_static(t, size=size), torch.zeros(0, 3))
    out = torch.nonzero_static(x.to(D), size=max(size, 0))
    assert out.stride() == torch.nonzero_static(x, size=max(size, 0)).stride()
    same(lambda t: torch.nonzero_static(t, size=2, out=torch.empty(0, dtype=torch.int32,
                                                                   device=t.device)), x)


@pytest.mark.parametrize("fn", [torch.max, torch.min])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float64, torch.int64])
def test_max_min_out(fn, out_dtype):
    same(lambda t: fn(t, out=torch.empty(0, dtype=out_dtype, device=t.device)), sample(5, 3))
    same(lambda t: fn(t, out=torch.empty(0, dtype=out_dtype, device=t.device)), torch.empty(0))


def test_searchsorted_scalar_out():
    seq = torch.tensor([1.0, 2.0, 2.0, 5.0])
    for right in (False, True):
        for dtype in (torch.int64, torch.int32):
            same(lambda s: torch.searchsorted(s, 2.0, right=right, out_int32=dtype == torch.int32,
                                              out=torch.empty(0, dtype=dtype, device=s.device)),
                 seq)
    same(lambda s: torch.searchsorted(s, 2.0, out=torch.empty(0, dtype=torch.int32,
                                                              device=s.device)), seq)


def batch_norm_both(fn, x, w, b):
    """fn(x, w, b, running_mean, running_var) on both devices: results and running stats."""
    res = []
    for dev in ("cpu", D):
        rm, rv = torch.zeros(3, device=dev), torch.ones(3, device=dev)
        loom.reset_metrics()
        out = fn(x.to(dev), w.to(dev), b.to(dev), rm, rv)
        res.append((out, rm, rv))
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    (want, rm, rv), (got, rml, rvl) = res
    for g, w_ in zip(got, want):
        assert (g.dtype, g.shape) == (w_.dtype, w_.shape)
        torch.testing.assert_close(g.cpu(), w_, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(rml.cpu(), rm)
    torch.testing.assert_close(rvl.cpu(), rv)
    return want, got


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_entry_points(training):
    x, w, b = sample(4, 3, 5, 5, seed=1), sample(3, seed=2), sample(3, seed=3)
    batch_norm_both(lambda x, w, b, rm, rv: A._native_batch_norm_legit(x, w, b, rm, rv, training,
                                                                       0.1, 1e-5), x, w, b)
    batch_norm_both(lambda x, w, b, rm, rv: A._native_batch_norm_legit.no_stats(
        x, w, b, True, 0.1, 1e-5), x, w, b)
    want, got = batch_norm_both(lambda x, w, b, rm, rv: A._batch_norm_with_update(
        x, w, b, rm, rv, 0.1, 1e-5), x, w, b)
    g = sample(4, 3, 5, 5, seed=4)
    stats = torch.zeros(3), torch.ones(3)
    cpu = A.batch_norm_backward(g, x, w, *stats, want[1], want[2], True, 1e-5, [True] * 3, want[3])
    lm = A.batch_norm_backward(g.to(D), x.to(D), w.to(D), *(s.to(D) for s in stats), got[1],
                               got[2], True, 1e-5, [True] * 3, got[3])
    for p, q in zip(cpu, lm):
        torch.testing.assert_close(q.cpu(), p, rtol=1e-4, atol=1e-4)


def test_batch_norm_out_forms():
    x, w, b = sample(4, 3, 5, seed=5), sample(3, seed=6), sample(3, seed=7)
    res = []
    for dev in ("cpu", D):
        outs = [torch.empty(0, device=dev) for _ in range(3)]
        A.native_batch_norm.out(x.to(dev), w.to(dev), b.to(dev), None, None, True, 0.1, 1e-5,
                                out=outs[0], save_mean=outs[1], save_invstd=outs[2])
        res.append(outs)
    for p, q in zip(*res):
        assert q.shape == p.shape
        torch.testing.assert_close(q.cpu(), p, rtol=1e-4, atol=1e-5)


def test_assert_async_msg():
    A._assert_async.msg(torch.tensor(1).to(D), "fine")
    for dev in ("cpu", D):
        with pytest.raises(RuntimeError, match="boom"):
            A._assert_async.msg(torch.tensor(0.0).to(dev), "boom")


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {"weight_decay": 0.05}), ("SGD", {"momentum": 0.9}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}), ("SGD", {}),
    ("Adam", {"lr": 0.01, "tensor_lr": True}), ("Adagrad", {}),
    ("Adagrad", {"lr_decay": 0.1, "weight_decay": 0.01, "maximize": True})])
def test_fused_optimizer_steps(name, kwargs):
    """`fused=True` steps (_fused_adam_, _fused_adamw_, _fused_sgd_, _fused_adagrad_) against
    the CPU's."""
    import copy
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    models = {"cpu": cpu, "loom": copy.deepcopy(cpu).to(D)}
    kwargs = dict(kwargs)
    lr = kwargs.pop("lr", 1e-2)
    if kwargs.pop("tensor_lr", False):
        lr = torch.tensor(lr)
    opts = {k: getattr(torch.optim, name)(m.parameters(), lr=lr, fused=True, **kwargs)
            for k, m in models.items()}
    x = sample(5, 8, seed=30)
    loom.reset_metrics()
    for _ in range(3):
        for k, dev in (("cpu", "cpu"), ("loom", D)):
            opts[k].zero_grad()
            models[k](x.to(dev)).square().mean().backward()
            opts[k].step()
    assert loom.metrics()["fallbacks"] == {}
    for p, q in zip(models["loom"].parameters(), cpu.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("found_inf", [0.0, 1.0])
def test_fused_adam_grad_scale_and_found_inf(found_inf):
    """The gradients are divided by grad_scale (and written back); found_inf 1 skips all."""
    state = {}
    for dev in ("cpu", D):
        p, g, m, v = (sample(6, seed=40 + j).to(dev) for j in range(4))
        v = v.abs()
        step = torch.tensor(3.0, device=dev)
        A._fused_adam_([p], [g], [m], [v], [], [step], lr=0.01, beta1=0.9, beta2=0.999,
                       weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False,
                       grad_scale=torch.tensor(2.0, device=dev),
                       found_inf=torch.tensor(found_inf, device=dev))
        state[dev] = [t.cpu() for t in (p, g, m, v)]
    for a, b in zip(state[D], state["cpu"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
