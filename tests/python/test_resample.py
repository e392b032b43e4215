"""Interpolation (nearest, nearest-exact, linear, bilinear, trilinear, bicubic) forward and backward
against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import outcome_like_cpu
from gradients import cpu_and_loom_gradients

D = loom.device


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def check(fn, x, tol=1e-4, grad=True):
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_(grad)
        loom.reset_metrics()
        y = fn(xs)
        res = [y.detach().cpu()]
        if grad:
            (y * sample(tuple(y.shape), 99, y.dtype).to(dev)).sum().backward()
            res.append(xs.grad.cpu())
        outs.append(res)
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*outs):
        assert got.shape == want.shape and got.stride() == want.stride()
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


SIZES = {1: [(2, 3, 5)], 2: [(2, 3, 5, 6), (1, 1, 1, 2)], 3: [(1, 2, 3, 4, 5)]}
TARGETS = {
    1: [dict(scale_factor=2), dict(size=7), dict(size=3), dict(scale_factor=1.7), dict(size=1)],
    2: [dict(scale_factor=2), dict(size=(7, 9)), dict(size=(3, 4)), dict(scale_factor=(1.5, 0.6)),
        dict(size=(1, 1))],
    3: [dict(scale_factor=2), dict(size=(4, 7, 3)), dict(scale_factor=(0.5, 1.5, 1.3))],
}
MODES = {1: ["nearest", "nearest-exact", "linear"], 2: ["nearest", "nearest-exact", "bilinear", "bicubic"],
         3: ["nearest", "nearest-exact", "trilinear"]}


@pytest.mark.parametrize("k", [1, 2, 3])
def test_interpolate(k):
    for mode in MODES[k]:
        for shape in SIZES[k]:
            x = sample(shape, sum(shape))
            for t in TARGETS[k]:
                corners = [None] if "nearest" in mode else [False, True]
                for ac in corners:
                    check(lambda x: F.interpolate(x, mode=mode, align_corners=ac, **t), x)


def test_interpolate_recompute_scale():
    x = sample((2, 3, 5, 6), 3)
    for mode in ("nearest", "bilinear"):
        check(lambda x: F.interpolate(x, scale_factor=1.3, mode=mode, recompute_scale_factor=False), x)
        check(lambda x: F.interpolate(x, scale_factor=1.3, mode=mode, recompute_scale_factor=True), x)


def test_interpolate_strided_and_channels_last():
    x = sample((2, 6, 5, 3), 4)
    for mode in ("nearest", "bilinear", "bicubic"):
        check(lambda x: F.interpolate(x.transpose(1, 3), size=(4, 9), mode=mode), x)
        check(lambda x: F.interpolate(x[:, ::2, 1:], scale_factor=2, mode=mode), x)
        check(lambda x: F.interpolate(x.contiguous(memory_format=torch.channels_last), size=(7, 5), mode=mode), x)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_interpolate_dtypes(dtype):
    tol = 2e-2 if dtype == torch.bfloat16 else 1e-7
    x = sample((2, 3, 5, 6), 5, dtype)
    check(lambda x: F.interpolate(x, size=(7, 9), mode="nearest"), x, tol)
    check(lambda x: F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True), x, tol)
    if dtype == torch.float64:
        check(lambda x: F.interpolate(x, size=(4, 9), mode="bicubic"), x, tol)
    else:
        # CPU 1.13 rounds bicubic weights and partial sums to bfloat16 (off by up to ~0.1 here);
        # Loom computes in float32 and rounds once, so it is compared with the exact result.
        exact = F.interpolate(x.double(), size=(4, 9), mode="bicubic")
        got = F.interpolate(x.to(D), size=(4, 9), mode="bicubic").cpu()
        torch.testing.assert_close(got.double(), exact, rtol=8e-3, atol=8e-3)


def test_interpolate_uint8_nearest():
    x = torch.arange(60, dtype=torch.uint8).view(1, 3, 4, 5)
    torch.testing.assert_close(F.interpolate(x.to(D), size=(7, 3)).cpu(), F.interpolate(x, size=(7, 3)))


def test_interpolate_kernel_count():
    x = sample((2, 3, 8, 8), 6).to(D)
    loom.sync()
    loom.reset_metrics()
    (F.interpolate(x, scale_factor=2, mode="bilinear") + 1).cpu()
    assert loom.metrics()["kernels_run"] == 1


def test_interpolate_errors():
    x = sample((2, 3, 5, 6), 7)
    for fn in (lambda x: F.interpolate(x, size=(0, 3)),
               lambda x: F.interpolate(x, size=(3, 0), mode="bilinear"),
               lambda x: torch._C._nn.upsample_bilinear2d(x[0, 0], (3, 3), False),
               lambda x: F.interpolate(x.half(), size=(4, 4), mode="bicubic"),
               lambda x: F.interpolate(x.long(), size=(4, 4), mode="bilinear")):
        # 2.x computes float16 bicubic: the same error or the same values
        outcome_like_cpu(lambda: fn(x), lambda: fn(x.to(D)), rtol=1e-2, atol=1e-2)


AA_CASES = [((2, 3, 16, 20), dict(size=(5, 7))), ((2, 3, 16, 20), dict(scale_factor=0.3)),
            ((1, 2, 8, 9), dict(size=(13, 17))), ((1, 2, 9, 8), dict(size=(9, 3))),
            ((1, 1, 1, 5), dict(size=(3, 2))), ((1, 2, 40, 40), dict(size=(3, 4)))]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_interpolate_antialias(mode, dtype):
    # PIL-style resampling: the weights come from the CPU's formulas in the input's dtype.
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for shape, target in AA_CASES:
        x = sample(shape, sum(shape), dtype)
        for ac in (False, True):
            check(lambda x: F.interpolate(x, mode=mode, align_corners=ac, antialias=True, **target),
                  x, tol=tol)


def test_interpolate_antialias_layouts_and_kernel_count():
    x = sample((2, 3, 16, 20), 5).to(memory_format=torch.channels_last)
    check(lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", antialias=True), x)
    check(lambda x: F.interpolate(x, size=(5, 7), mode="bicubic", antialias=True),
          sample((2, 3, 20, 40), 6)[..., ::2])
    xl = sample((2, 3, 16, 20), 7).to(D)
    loom.sync()
    loom.reset_metrics()
    F.interpolate(xl, size=(5, 7), mode="bilinear", antialias=True).cpu()
    assert loom.metrics()["kernels_run"] == 2  # one pass per dim, as the CPU's separable kernel


@pytest.mark.parametrize("fn", [
    lambda d: F.interpolate(torch.ones(1, 2, 4, 4, device=d).half(), size=(2, 2), mode="bilinear",
                            antialias=True),
    lambda d: F.interpolate(torch.ones(1, 2, 4, 4, device=d).bfloat16(), size=(2, 2),
                            mode="bicubic", antialias=True),
    lambda d: torch.ops.aten._upsample_bilinear2d_aa_backward(
        torch.ones(1, 2, 3, 3, device=d).half(), [3, 3], [1, 2, 4, 4], False),
    lambda d: torch.ops.aten._upsample_bilinear2d_aa(torch.ones(2, 0, 4, 4, device=d), [3, 3], False),
])
def test_interpolate_antialias_errors_match_cpu(fn):
    # 1.13 has no reduced-float kernels here, 2.x has: the same error or the same values
    outcome_like_cpu(lambda: fn("cpu"), lambda: fn(D), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolation_gradient_scatters_in_parallel(mode):
    """Interpolation's gradient scatters at coordinates clamped into the input, which rows of
    different images never share: the scatters split across threads (NOTE [Parallel
    scatters]), none in order."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(3, 4, 9, 7, generator=g)
    grads = cpu_and_loom_gradients(lambda t: F.interpolate(t, scale_factor=1.7, mode=mode), x, 12)
    assert loom.metrics()["ordered_scatters"] == 0
    torch.testing.assert_close(grads[1].cpu(), grads[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode,size", [("bilinear", (9, 7)), ("bicubic", (9, 7)), ("trilinear", (5, 4, 6)),
                                       ("linear", (9,))])
def test_interpolation_gradient_is_one_tap_scatter(mode, size):
    """With a gradient that is cheap to read again (here realized), the gradient is one
    scatter over the output positions and their taps (NOTE [Tap scatters])."""
    g = torch.Generator().manual_seed(13)
    x = torch.randn((2, 3) + size, generator=g)
    kw = dict(scale_factor=1.7, mode=mode, align_corners=False)
    y = torch.nn.functional.interpolate(x, **kw)
    w = torch.randn(y.shape, generator=g)
    xs = x.clone().requires_grad_()
    want = torch.autograd.grad(torch.nn.functional.interpolate(xs, **kw), xs, w)[0]
    xl = x.to(loom.device).requires_grad_()
    yl = torch.nn.functional.interpolate(xl, **kw)
    wl = w.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    got = torch.autograd.grad(yl, xl, wl)[0].cpu()
    m = loom.metrics()
    scatters = m["kernels_run"] - 1  # the zero fill
    assert (scatters, m["ordered_scatters"]) == (1, 0)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolation_gradient_computed_by_gathers_is_stored_then_one_tap_scatter(mode):
    """A loss on the interpolation's own output makes a gradient that the forward's gathers
    compute: it is stored by one kernel, then scattered once over positions and taps, not
    recomputed per tap nor scattered per term (NOTE [Tap scatters])."""
    g = torch.Generator().manual_seed(14)
    x = torch.randn(2, 3, 9, 7, generator=g)
    kw = dict(size=(16, 13), mode=mode, align_corners=False)
    grads = []
    for dev in ("cpu", loom.device):
        xs = x.to(dev).requires_grad_()
        y = torch.nn.functional.interpolate(xs, **kw)
        loss = (y * y).sum()
        loom.sync()
        loom.reset_metrics()
        grads.append(torch.autograd.grad(loss, xs)[0].cpu())
    m = loom.metrics()
    # The gradient 2 * y stored, the zero fill, one scatter.
    assert m["ordered_scatters"] == 0
    assert m["kernels_run"] == 3
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-4, atol=1e-4)
