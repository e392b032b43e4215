"""Activations and their backward ops against CPU torch: forward, input gradient (autograd
with a random weighting of the output), in-place and out= forms, reduced floats, strided
inputs, edge values; nothing may fall back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import raises_like_cpu

D = loom.device
A = torch.ops.aten
REDUCED = (torch.float16, torch.bfloat16)
DTYPES = (torch.float32, torch.float64) + REDUCED
# Half/BFloat16 compute in float and round once; products with the weighting round again.
TOL = {torch.float32: 1e-5, torch.float64: 1e-10, torch.float16: 5e-3, torch.bfloat16: 3e-2}


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def sample(shape, seed=0, dtype=torch.float32, scale=3.0):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)


def run(fn, inputs, dev, wrt, ref_dtype=None):
    xs = []
    for i, t in enumerate(inputs):
        if isinstance(t, torch.Tensor):
            t = t.detach()
            if ref_dtype is not None and t.is_floating_point():
                t = t.to(ref_dtype)
            t = t.to(dev).requires_grad_(i in wrt)
        xs.append(t)
    out = fn(*xs)
    if wrt:
        w = sample(tuple(out.shape), seed=99, dtype=out.dtype, scale=1.0).to(dev)
        (out * w).sum().backward()
    grads = [x.grad.cpu() for i, x in enumerate(xs) if i in wrt]
    return out.detach().cpu(), grads


def check(fn, *inputs, wrt=(0,), tol=None):
    """fn(*inputs) and its input gradients on Loom equal CPU's. Where CPU has no Half or
    BFloat16 kernel, the reference is CPU in float32 on the same (rounded) inputs."""
    dtype = next(t.dtype for t in inputs if isinstance(t, torch.Tensor) and t.is_floating_point())
    tol = TOL[dtype] if tol is None else tol
    try:
        want = run(fn, inputs, "cpu", wrt)
    except RuntimeError as e:
        if dtype not in REDUCED or "not implemented for" not in str(e):
            raise
        want = run(fn, inputs, "cpu", wrt, ref_dtype=torch.float32)
    got = run(fn, inputs, D, wrt)
    assert got[0].dtype == dtype
    for a, b in zip([got[0]] + got[1], [want[0]] + want[1]):
        torch.testing.assert_close(a.double(), b.double(), rtol=tol, atol=tol, equal_nan=True)


ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "leaky_relu": F.leaky_relu,
    "leaky_relu_0.2": lambda x: F.leaky_relu(x, 0.2),
    "elu": F.elu,
    "elu_0.5": lambda x: F.elu(x, alpha=0.5),
    "elu_scales": lambda x: A.elu(x, 1.5, 0.8, 1.3),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, alpha=0.7),
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=1.5),
    "hardswish": F.hardswish,
    "hardtanh": F.hardtanh,
    "hardtanh_limits": lambda x: F.hardtanh(x, -0.5, 2.0),
    "relu6": F.relu6,
    "hardsigmoid": F.hardsigmoid,
    "mish": F.mish,
    "logsigmoid": F.logsigmoid,
    "clamp_min": lambda x: x.clamp_min(0.25),
    "clamp_max": lambda x: x.clamp_max(-0.25),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation(name, dtype):
    check(ACTIVATIONS[name], sample((6, 7), seed=1, dtype=dtype))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_strided(name):
    check(ACTIVATIONS[name], sample((7, 6), seed=2).t())
    check(ACTIVATIONS[name], sample((4, 10), seed=3)[:, 1::3])


# Values on the branch points of each formula, and non-finite ones.
EDGES = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0, 0.5, -0.5, 2.0, 1.5, 20.0, -20.0, 25.0,
         -100.0, 100.0, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_edges(name):
    # Stepped views, so that the CPU takes its scalar formulas: its vectorized bodies differ
    # from them at some edges (hardswish' at 3: the outer branch; 2.x's float gelu of +inf:
    # NaN), so a contiguous tensor's CPU result depends on where an edge value sits.
    for dtype in (torch.float32, torch.float64):
        check(ACTIVATIONS[name], torch.tensor(EDGES, dtype=dtype).repeat_interleave(2)[::2])


INPLACE = {
    "silu_": lambda x: F.silu(x, inplace=True),
    "leaky_relu_": lambda x: F.leaky_relu(x, 0.1, inplace=True),
    "elu_": lambda x: F.elu(x, inplace=True),  # backward from the result (is_result)
    "selu_": lambda x: F.selu(x, inplace=True),
    "celu_": lambda x: F.celu(x, 0.6, inplace=True),
    "hardswish_": lambda x: F.hardswish(x, inplace=True),
    "hardtanh_": lambda x: F.hardtanh(x, -2.0, 1.0, inplace=True),
    "relu6_": lambda x: F.relu6(x, inplace=True),
    "hardsigmoid_": lambda x: F.hardsigmoid(x, inplace=True),
    "mish_": lambda x: F.mish(x, inplace=True),
    "clamp_min_": lambda x: x.clamp_min_(0.25),
    "clamp_max_": lambda x: x.clamp_max_(-0.25),
    "sigmoid_": lambda x: x.sigmoid_(),
    "tanh_": lambda x: x.tanh_(),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace(name):
    # on a non-leaf (a leaf that requires grad cannot be written in place), through a view
    check(lambda x: INPLACE[name]((x * 1.0)[:, 1:]), sample((5, 6), seed=4))


@pytest.mark.parametrize("op", [F.elu_, lambda t: F.leaky_relu_(t, 0.3), F.hardtanh_], ids=str)
def test_inplace_on_transposed_view(op):
    def fn(x):
        y = x * 1.0
        op(y.t()[1:])
        return y
    check(fn, sample((5, 6), seed=5))


# Backward ops called directly, functional and with an out tensor (resized from empty).
def backward_calls(x, y, g):
    return {
        "gelu_backward": (A.gelu_backward, (g, x), {}),
        "gelu_backward_tanh": (A.gelu_backward, (g, x), {"approximate": "tanh"}),
        "silu_backward": (A.silu_backward, (g, x), {}),
        "sigmoid_backward": (A.sigmoid_backward, (g, y), {}),
        "tanh_backward": (A.tanh_backward, (g, y), {}),
        "leaky_relu_backward": (A.leaky_relu_backward, (g, x, 0.1, False), {}),
        "elu_backward": (A.elu_backward, (g, 1.2, 0.9, 1.1, False, x), {}),
        "elu_backward_result": (A.elu_backward, (g, 1.2, 0.9, 1.1, True, y), {}),
        "softplus_backward": (A.softplus_backward, (g, x, 1.5, 2.0), {}),
        "hardswish_backward": (A.hardswish_backward, (g, x), {}),
        "hardtanh_backward": (A.hardtanh_backward, (g, x, -1.5, 0.5), {}),
        "hardsigmoid_backward": (A.hardsigmoid_backward, (g, x), {}),
        "log_sigmoid_backward": (A.log_sigmoid_backward, (g, x, (-x.abs()).exp()), {}),
    }


OUT_NAME = {"hardswish_backward": "out"}


BACKWARD_OPS = list(backward_calls(*[torch.zeros(1)] * 3))


@pytest.mark.parametrize("name", BACKWARD_OPS)
def test_backward_op(name):
    x, y, g = sample((5, 4), seed=6), torch.rand(5, 4) - 0.5, sample((5, 4), seed=7)
    op, args, kw = backward_calls(x, y, g)[name]
    want = op(*args, **kw)
    to = lambda a: a.to(D) if isinstance(a, torch.Tensor) else a  # noqa: E731
    largs = [to(a) for a in args]
    torch.testing.assert_close(op(*largs, **kw).cpu(), want)
    out = torch.empty(0, device=D)
    overload = getattr(op, OUT_NAME.get(name, "grad_input"))
    r = overload(*largs, **kw, **{OUT_NAME.get(name, "grad_input"): out})
    assert r is out
    torch.testing.assert_close(out.cpu(), want)


FORWARD_OUT = {
    "gelu": (A.gelu.out, {"approximate": "tanh"}),
    "silu": (A.silu.out, {}),
    "mish": (A.mish.out, {}),
    "hardswish": (A.hardswish.out, {}),
    "hardsigmoid": (A.hardsigmoid.out, {}),
    "leaky_relu": (lambda x, out: A.leaky_relu.out(x, 0.3, out=out), {}),
    "elu": (lambda x, out: A.elu.out(x, 0.5, 1.0, 2.0, out=out), {}),
    "softplus": (lambda x, out: A.softplus.out(x, 2.0, 3.0, out=out), {}),
    "hardtanh": (lambda x, out: A.hardtanh.out(x, -0.5, 0.5, out=out), {}),
    "clamp_min": (lambda x, out: A.clamp_min.out(x, 0.1, out=out), {}),
    "clamp_max": (lambda x, out: A.clamp_max.out(x, 0.1, out=out), {}),
    "clamp_min_t": (lambda x, out: A.clamp_min.Tensor_out(x, x.flip(0), out=out), {}),
    "clamp_max_t": (lambda x, out: A.clamp_max.Tensor_out(x, x.flip(0), out=out), {}),
}


@pytest.mark.parametrize("name", list(FORWARD_OUT))
def test_forward_out(name):
    op, kw = FORWARD_OUT[name]
    x = sample((5, 4), seed=8)
    want = torch.empty(0)
    op(x, out=want, **kw)
    for out in (torch.empty(0, device=D), torch.empty(4, 5, device=D).t()):
        r = op(x.to(D), out=out, **kw)
        assert r is out and out.stride() == (want.stride() if out.is_contiguous() else (1, 5))
        torch.testing.assert_close(out.cpu(), want)


def test_log_sigmoid_forward_buffer():
    x = sample((3, 4), seed=9)
    want = A.log_sigmoid_forward(x)
    got = A.log_sigmoid_forward(x.to(D))
    for a, b in zip(got, want):
        torch.testing.assert_close(a.cpu(), b)
    # an empty buffer (as CUDA's forward returns) is recomputed
    g = sample((3, 4), seed=10)
    torch.testing.assert_close(A.log_sigmoid_backward(g.to(D), x.to(D), torch.empty(0, device=D)).cpu(),
                               A.log_sigmoid_backward(g, x, want[1]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool], ids=str)
def test_clamp_one_sided_types(dtype):
    x = torch.tensor([0, 1, 3, 5, 2]).to(dtype)
    bound = torch.tensor([1, 4, 0, 9, 2])
    for fn in (lambda t, b: t.clamp_min(2), lambda t, b: t.clamp_max(2),
               lambda t, b: t.clamp_min(1.5), lambda t, b: t.clamp_max(torch.tensor(2.5)),
               lambda t, b: t.clamp_min(b), lambda t, b: t.clamp_max(b.double())):
        want = fn(x, bound)
        got = fn(x.to(D), bound.to(D)).cpu()
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.uint8], ids=str)
def test_hardtanh_integer(dtype):
    x = torch.tensor([-3, -1, 0, 1, 2, 7]).to(dtype)
    for lo, hi in ((0, 6), (1.7, 2.9)):
        torch.testing.assert_close(F.hardtanh(x.to(D), lo, hi).cpu(), F.hardtanh(x, lo, hi))


BAD = {
    "gelu_int": lambda d: F.gelu(torch.arange(3, device=d)),
    "silu_bool": lambda d: F.silu(torch.ones(3, dtype=torch.bool, device=d)),
    "elu_int": lambda d: F.elu(torch.arange(3, device=d)),
    "hardtanh_bool": lambda d: F.hardtanh(torch.ones(3, dtype=torch.bool, device=d)),
    "hardtanh_uint8_negative": lambda d: F.hardtanh(torch.ones(3, dtype=torch.uint8, device=d)),
    "leaky_relu_backward_inplace_negative": lambda d: A.leaky_relu_backward(
        torch.ones(3, device=d), torch.ones(3, device=d), -0.1, True),
    "gelu_bad_approximate": lambda d: F.gelu(torch.ones(3, device=d), approximate="fast"),
    "softplus_backward_shapes": lambda d: A.softplus_backward(
        torch.ones(3, device=d), torch.ones(4, device=d), 1, 20),
    "clamp_min_int_inplace_float": lambda d: torch.ones(3, dtype=torch.long, device=d).clamp_min_(0.5),
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_match_cpu(name):
    raises_like_cpu(lambda: BAD[name]("cpu"), lambda: BAD[name](D), first_line=False)


def test_forward_and_backward_fuse():
    x = sample((8, 9), seed=11).to(D).requires_grad_()
    loom.sync()
    loom.reset_metrics()
    y = F.silu(F.gelu(x, approximate="tanh"))
    y.sum().backward()
    x.grad.cpu()
    assert loom.metrics()["kernels_run"] == 1


@pytest.mark.parametrize("threshold", [0.0, 0.5])
def test_threshold_backward_passes_nan_as_cpu(threshold):
    # 0 where self <= threshold, else the gradient: a NaN input passes its gradient.
    x = torch.tensor([float("nan"), -1.0, 0.0, 0.5, 2.0, float("inf"), -float("inf")])
    g = torch.arange(1.0, 8.0)
    ref = torch.ops.aten.threshold_backward(g, x, threshold)
    got = torch.ops.aten.threshold_backward(g.to(D), x.to(D), threshold).cpu()
    assert torch.equal(got, ref)


def test_efficientzerotensor():
    # the zero gradient of sgn and friends on real inputs
    z = A._efficientzerotensor([2, 5], dtype=torch.float64, device=D)
    assert z.device == torch.empty(0, device=D).device and z.dtype == torch.float64
    torch.testing.assert_close(z.cpu(), torch.zeros(2, 5, dtype=torch.float64))
    assert A._efficientzerotensor([3], device=D).dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_rrelu(dtype):
    # Training draws a slope in [lower, upper] per element <= 0 (Loom's random numbers, so
    # checked by range and by the gradient, which is that slope); evaluation is leaky_relu
    # with the mean slope, as on the CPU.
    loom.reset_metrics()
    x = torch.randn(6, 7, generator=torch.Generator().manual_seed(4)).to(dtype)
    x[0, :3] = 0
    g = torch.randn(6, 7, generator=torch.Generator().manual_seed(5)).to(dtype)
    for training in (True, False):
        a = x.to(loom.device).requires_grad_()
        y = torch.nn.functional.rrelu(a, 0.1, 0.3, training=training)
        grad, = torch.autograd.grad(y, a, g.to(loom.device))
        y, grad = y.detach().cpu(), grad.cpu()
        assert y.dtype == dtype and y.shape == x.shape
        pos = x > 0
        assert torch.equal(y[pos], x[pos]) and torch.equal(grad[pos], g[pos])
        if training:
            slope = grad[~pos] / g[~pos]
            assert bool(((slope >= 0.1) & (slope <= 0.3)).all())
            # The slope comes back through two roundings (the gradient, the quotient) and
            # the product rounds again: three of the dtype's steps apart at most.
            rtol = max(1e-2, 3 * torch.finfo(dtype).eps)
            assert torch.allclose(y[~pos].double(), (x[~pos] * slope).double(), rtol=rtol)
        else:
            b = x.clone().requires_grad_()
            want = torch.nn.functional.rrelu(b, 0.1, 0.3, training=False)
            want_grad, = torch.autograd.grad(want, b, g)
            assert torch.equal(y, want.detach()) and torch.equal(grad, want_grad)
    inplace = x.to(loom.device)
    torch.nn.functional.rrelu_(inplace, 0.25, 0.25, training=True)
    torch.testing.assert_close(inplace.cpu(), torch.nn.functional.leaky_relu(x, 0.25))
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("bad", [
    lambda d: torch.nn.functional.rrelu(torch.ones(3, dtype=torch.half, device=d), training=True),
    lambda d: torch.nn.functional.rrelu(torch.ones(3, device=d), 0.5, 0.1, training=True),
])
def test_rrelu_errors(bad):
    raises_like_cpu(lambda: bad("cpu"), lambda: bad(loom.device))


def test_hardtanh_backward_layouts_match_cpu():
    # Loom lays the result out with mul's meta function (the CPU's binary TensorIterator).
    g = torch.randn(4, 6, dtype=torch.float64)
    x = torch.randn(6, 4).t()
    for args in [(g, x), (g.t().contiguous().t(), x), (g[:, :1], x), (g.float(), x)]:
        want = A.hardtanh_backward(*args, -0.5, 0.5)
        got = A.hardtanh_backward(*[a.to(D) for a in args], -0.5, 0.5)
        assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
        torch.testing.assert_close(got.cpu(), want)
