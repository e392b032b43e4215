"""Losses and their backward ops against CPU torch: each reduction, argument and dtype, on
contiguous and strided inputs, gradients w.r.t. input and target; embedding's backward;
xlogy. Nothing may fall back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import raises_like_cpu
from test_activation import DTYPES, REDUCED, check, sample

D = loom.device
A = torch.ops.aten
REDUCTIONS = ("none", "mean", "sum")


# l1_loss's gradient is sgn(x - y); sgn has its Loom kernel on the complex branch. Until
# that is merged, it is the one fallback these tests accept.
SGN_ON_LOOM = torch._C._dispatch_has_kernel_for_dispatch_key("aten::sgn.out", "PrivateUse1")


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    fallbacks = dict(loom.metrics()["fallbacks"])
    if not SGN_ON_LOOM:
        fallbacks.pop("aten::sgn.out", None)
    assert fallbacks == {}


def prob(shape, seed, dtype=torch.float32):
    return torch.sigmoid(sample(shape, seed=seed, dtype=torch.float64)).to(dtype)


# name -> (loss(input, target, reduction), make inputs(dtype), differentiable inputs)
def regression(fn):
    return (fn, lambda dt: (sample((6, 5), 1, dt), sample((6, 5), 2, dt)), (0, 1))


LOSSES = {
    "mse": regression(lambda x, y, r: F.mse_loss(x, y, reduction=r)),
    "l1": regression(lambda x, y, r: F.l1_loss(x, y, reduction=r)),
    "smooth_l1": regression(lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r)),
    "smooth_l1_beta": regression(lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=2.5)),
    "smooth_l1_beta0": regression(lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0)),
    "huber": regression(lambda x, y, r: F.huber_loss(x, y, reduction=r)),
    "huber_delta": regression(lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=2.5)),
    "bce": (lambda x, y, r: F.binary_cross_entropy(x, y, reduction=r),
            lambda dt: (prob((6, 5), 3, dt), prob((6, 5), 4, dt)), (0, 1)),
    "bce_weight": (lambda x, y, w, r: F.binary_cross_entropy(x, y, weight=w, reduction=r),
                   lambda dt: (prob((6, 5), 3, dt), prob((6, 5), 4, dt),
                               prob((5,), 5, dt)), (0, 1)),
    "bce_logits": (lambda x, y, r: F.binary_cross_entropy_with_logits(x, y, reduction=r),
                   lambda dt: (sample((6, 5), 6, dt), prob((6, 5), 7, dt)), (0, 1)),
    "bce_logits_weights": (
        lambda x, y, w, p, r: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=p,
                                                                 reduction=r),
        lambda dt: (sample((6, 5), 6, dt), prob((6, 5), 7, dt), prob((6, 1), 8, dt),
                    2 * prob((5,), 9, dt)), (0, 1)),
    "soft_margin": (lambda x, y, r: F.soft_margin_loss(x, y, reduction=r),
                    lambda dt: (sample((6, 5), 10, dt), sample((6, 5), 11, dt).sign()), (0,)),
    "kl_div": (lambda x, y, r: F.kl_div(x, y, reduction=r),
               lambda dt: (sample((6, 5), 12, torch.float64).log_softmax(1).to(dt),
                           prob((6, 5), 13, dt)), (0, 1)),
    "kl_div_log_target": (lambda x, y, r: F.kl_div(x, y, reduction=r, log_target=True),
                          lambda dt: (sample((6, 5), 14, dt), sample((6, 5), 15, dt)), (0, 1)),
}


def loss_check(name, reduction, dtype, layout=lambda t: t):
    fn, make, wrt = LOSSES[name]
    inputs = [layout(t) for t in make(dtype)]
    tol = None
    if dtype in REDUCED and reduction != "none":
        tol = 5e-2  # a sum of 30 rounded terms
    check(lambda *a: fn(*a, reduction), *inputs, wrt=wrt, tol=tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss(name, dtype, reduction):
    loss_check(name, reduction, dtype)


def transposed(t):
    return t.t().contiguous().t() if t.dim() == 2 else t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_strided(name, reduction):
    loss_check(name, reduction, torch.float32, transposed)
    loss_check(name, reduction, torch.float32, lambda t: t[::2] if t.dim() == 2 else t)


def test_loss_broadcast_target():
    # the aten ops broadcast (the Python wrappers warn and expand first)
    x, y = sample((4, 5), 16), sample((5,), 17)
    for op in (A.mse_loss, A.l1_loss, A.smooth_l1_loss, A.huber_loss):
        check(lambda a, b: op(a, b, 0), x, y, wrt=(0, 1))
        check(lambda a, b: op(a, b, 1), x, y, wrt=(0, 1))


def test_bce_log_clamp_and_range():
    # log(0) is clamped at -100; inputs at exactly 0 and 1
    x = torch.tensor([0.0, 1.0, 0.5, 1e-30, 1.0 - 1e-7, 0.25])
    y = torch.tensor([1.0, 0.0, 0.5, 1.0, 0.0, 1.0])
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), x, y, wrt=(1,))
    check(lambda a, b: F.binary_cross_entropy(a, b, reduction="sum"), x, y, wrt=(0,))


@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan")])
def test_bce_input_out_of_range_raises(bad):
    x = torch.tensor([0.2, bad, 0.7])
    y = torch.tensor([0.0, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x, y)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x.to(D), y.to(D)).item()


# Backward ops called directly, functional and into an out tensor.
BACKWARD = {
    "mse_loss_backward": (A.mse_loss_backward, "grad_input", (1,)),
    "smooth_l1_loss_backward": (A.smooth_l1_loss_backward, "grad_input", (1, 0.7)),
    "huber_loss_backward": (A.huber_loss_backward, "out", (2, 0.7)),
    "binary_cross_entropy_backward": (A.binary_cross_entropy_backward, "grad_input", (None, 1)),
    "binary_cross_entropy_backward_none": (A.binary_cross_entropy_backward, "grad_input",
                                           (None, 0)),
    "soft_margin_loss_backward": (A.soft_margin_loss_backward, "grad_input", (0,)),
}


@pytest.mark.parametrize("name", list(BACKWARD))
def test_backward_op(name):
    op, out_name, extra = BACKWARD[name]
    mean = extra[-1] == 1 if name.startswith("binary") else extra[0] != 0
    g = torch.tensor(0.7) if mean else sample((4, 3), 18)
    x, y = prob((4, 3), 19), prob((4, 3), 20)
    want = op(g, x, y, *extra)
    got = op(g.to(D), x.to(D), y.to(D), *extra)
    torch.testing.assert_close(got.cpu(), want)
    out = torch.empty(0, device=D)
    r = getattr(op, out_name)(g.to(D), x.to(D), y.to(D), *extra, grad_input=out)
    assert r is out
    torch.testing.assert_close(out.cpu(), want)


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss",
                                  "binary_cross_entropy"])
def test_forward_out(name):
    op = getattr(A, name)
    x, y = prob((4, 3), 21), prob((4, 3), 22)
    for reduction in (0, 1, 2):
        want = op(x, y, reduction=reduction)
        out = torch.empty(0, device=D)
        op.out(x.to(D), y.to(D), reduction=reduction, out=out)
        torch.testing.assert_close(out.cpu(), want)


BAD = {
    "mse_int": lambda d: F.mse_loss(torch.arange(3, device=d), torch.arange(3, device=d)),
    "huber_delta": lambda d: F.huber_loss(torch.ones(3, device=d), torch.ones(3, device=d), delta=0.0),
    "smooth_l1_beta": lambda d: A.smooth_l1_loss(torch.ones(3, device=d), torch.ones(3, device=d), 1, -1.0),
    "mse_shapes": lambda d: A.mse_loss(torch.ones(3, device=d), torch.ones(4, device=d)),
    "mse_backward_dtypes": lambda d: A.mse_loss_backward(
        torch.tensor(1.0, device=d), torch.ones(3, device=d), torch.ones(3, device=d, dtype=torch.float64), 1),
    "embedding_float_indices": lambda d: A.embedding_dense_backward(
        torch.ones(2, 3, device=d), torch.ones(2, device=d), 4, -1, False),
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_match_cpu(name):
    raises_like_cpu(lambda: BAD[name]("cpu"), lambda: BAD[name](D), first_line=False)


# --- embedding ---

INDICES = torch.tensor([[1, 2, 4, 5], [4, 3, 2, 9], [1, 1, 1, 0]])


@pytest.mark.parametrize("scale", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 1, -1])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_embedding_backward(dtype, padding_idx, scale):
    w = sample((10, 3), 23, dtype)
    check(lambda weight, i: F.embedding(i, weight, padding_idx=padding_idx,
                                        scale_grad_by_freq=scale), w, INDICES)


def test_embedding_backward_int32_strided():
    w = sample((3, 10), 24).t()
    check(lambda weight, i: F.embedding(i, weight, padding_idx=4, scale_grad_by_freq=True), w,
          INDICES.t().int())


@pytest.mark.parametrize("scale", [False, True])
def test_embedding_dense_backward_direct(scale):
    g = sample((3, 4, 5), 25)
    want = A.embedding_dense_backward(g, INDICES, 12, 2, scale)
    got = A.embedding_dense_backward(g.to(D), INDICES.to(D), 12, 2, scale)
    torch.testing.assert_close(got.cpu(), want)
    out = torch.empty(0, device=D)
    A.embedding_dense_backward.out(g.to(D), INDICES.to(D), 12, 2, scale, out=out)
    torch.testing.assert_close(out.cpu(), want)
    # integer gradients accumulate exactly
    gi = torch.arange(60).reshape(3, 4, 5)
    torch.testing.assert_close(A.embedding_dense_backward(gi.to(D), INDICES.to(D), 12, -1, False).cpu(),
                               A.embedding_dense_backward(gi, INDICES, 12, -1, False))


def test_embedding_dense_backward_index_out_of_range():
    with pytest.raises(IndexError, match="out of bounds"):
        A.embedding_dense_backward(torch.ones(2, 3, device=D), torch.tensor([1, 7], device=D), 5,
                                   -1, False).cpu()


# --- xlogy ---

def test_xlogy():
    x = torch.tensor([0.0, 0.0, 1.5, 2.0, -1.0, 3.0, float("nan"), 0.0])
    y = torch.tensor([0.0, float("nan"), 2.0, 0.0, 3.0, -1.0, 1.0, float("inf")])
    check(lambda a, b: torch.xlogy(a, b), x, y, wrt=())
    check(lambda a, b: torch.xlogy(a, b), x.double(), y.double(), wrt=())
    for a, b in ((x, 2.0), (3, y), (torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3]))):
        la = a.to(D) if isinstance(a, torch.Tensor) else a
        lb = b.to(D) if isinstance(b, torch.Tensor) else b
        want = torch.xlogy(a, b)
        got = torch.xlogy(la, lb).cpu()
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, equal_nan=True)
    lx = x.to(D)
    lx.xlogy_(y.to(D))
    torch.testing.assert_close(lx.cpu(), x.clone().xlogy_(y), equal_nan=True)
    out = torch.empty(0, device=D)
    torch.xlogy(x.to(D), y.to(D), out=out)
    torch.testing.assert_close(out.cpu(), torch.xlogy(x, y), equal_nan=True)


BCE_CASES = [  # (input shape, target shape, weight shape or None, reduction)
    ((3, 4), (3, 4), None, "none"), ((3, 4), (3, 4), (4,), "mean"), ((3, 1), (3,), None, "sum"),
    ((3, 4), (1, 4), None, "none"), ((3, 4), (3, 4), (3, 1), "none"),
]


@pytest.mark.parametrize("case", range(len(BCE_CASES)))
def test_binary_cross_entropy_shapes_match_cpu(case):
    xs, ts, ws, red = BCE_CASES[case]
    g = torch.Generator().manual_seed(case)
    x = torch.rand(xs, generator=g) * 0.9 + 0.05
    t = torch.rand(ts, generator=g)
    w = torch.rand(ws, generator=g) if ws else None
    r = {"none": 0, "mean": 1, "sum": 2}[red]
    args = [(x, t, w), tuple(a.to(loom.device) if a is not None else None for a in (x, t, w))]
    want = torch.ops.aten.binary_cross_entropy(*args[0], r)
    got = torch.ops.aten.binary_cross_entropy(*args[1], r)
    assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-6)


BCE_ERRORS = [
    lambda d: torch.ops.aten.binary_cross_entropy(torch.rand(3, 4, device=d) * 0.5,
                                                  torch.rand(3, 4, dtype=torch.double, device=d),
                                                  None, 1),
    lambda d: torch.ops.aten.binary_cross_entropy(torch.rand(3, 4, device=d) * 0.5,
                                                  torch.rand(3, 4, device=d),
                                                  torch.rand(3, 4, 2, device=d), 1),
    lambda d: torch.ops.aten.binary_cross_entropy(torch.rand(3, 4, device=d) * 0.5,
                                                  torch.rand(3, 2, device=d), None, 1),
]


@pytest.mark.parametrize("i", range(len(BCE_ERRORS)))
def test_binary_cross_entropy_errors_match_cpu(i):
    from cpu_errors import raises_like_cpu
    raises_like_cpu(lambda: BCE_ERRORS[i]("cpu"), lambda: BCE_ERRORS[i](loom.device))


def test_huber_and_logit_layouts_match_cpu():
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(5)
    x, t = torch.rand(3, 4, generator=g), torch.rand(3, 4, generator=g)
    cases = [lambda a, b: F.huber_loss(a, b, reduction="none"),
             lambda a, b: F.huber_loss(a.t(), b.t(), reduction="none"),
             lambda a, b: F.huber_loss(a, b), lambda a, b: F.huber_loss(a, b, reduction="sum"),
             lambda a, b: torch.logit(a), lambda a, b: torch.logit(a.t(), 1e-3),
             lambda a, b: torch.logit(a, out=torch.empty(5, device=a.device))]
    for fn in cases:
        want, got = fn(x, t), fn(x.to(loom.device), t.to(loom.device))
        assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
        torch.testing.assert_close(got.cpu(), want)
