"""How reductions and scans are cut into kernels and loops on Loom: split reductions,
column blocks, nested reductions stored first, scans along outer axes in blocks; values
against CPU torch, kernel counts exact."""
import pytest
import torch

import loom
from kernel_text import kernel_sources
# no_fallback: every op here must run on Loom (an autouse fixture, found here by import).
from test_reduce import make, no_fallback, tol  # noqa: F401


# NOTE [Split reductions]: a reduction to one value over 4M elements or more is two kernels,
# the first across threads.
SPLIT = {
    "sum": lambda t: t.sum(),
    "mean": lambda t: t.mean(),
    "amax": lambda t: t.amax(),
    "amin": lambda t: t.amin(),
    "norm": lambda t: t.norm(),
    "keepdim": lambda t: t.sum((0, 1), keepdim=True),
    "any": lambda t: (t > 3.5).any(),
    "all": lambda t: (t > -6).all(),
    "int_sum": lambda t: (t * 100).long().sum(),
}


@pytest.mark.parametrize("name", list(SPLIT))
def test_split_reduction_is_two_kernels(name):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2048, 2048, generator=g)
    xl = x.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    got = SPLIT[name](xl)
    got_cpu = got.cpu()
    assert loom.metrics()["kernels_run"] == 2
    want = SPLIT[name](x)
    assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
    if want.dtype.is_floating_point:
        # Float32 sums of 4M values: the CPU's are pairwise, Loom's run per lane; both within
        # a few 1e-6 of the float64 sum relative to the sum of magnitudes (Loom's error was
        # larger unsplit: one pass per lane over all 4M values).
        ref = SPLIT[name](x.double())
        if name in ("amax", "amin"):
            assert torch.equal(got_cpu, want)
        else:  # the same reduction over magnitudes (sums), or the result itself (norm)
            scale = SPLIT[name](x.double().abs()) if name != "norm" else ref
            assert ((got_cpu.double() - ref).abs() <= 1e-6 * scale).all()
    else:
        assert torch.equal(got_cpu, want)


def _cl(t):
    return t.to(memory_format=torch.channels_last)


COLUMNS = {  # name: (reduction, input, kernels)
    "channels_last_mean": (lambda t: t.mean((0, 2, 3)), lambda g: _cl(torch.randn(32, 64, 16, 16, generator=g)), 2),
    "contiguous_mean": (lambda t: t.mean((0, 2, 3)), lambda g: torch.randn(32, 64, 16, 16, generator=g), 1),
    "rows_of_three": (lambda t: t.sum(0), lambda g: torch.randn(1 << 19, 3, generator=g), 2),
    "three_rows": (lambda t: t.sum(1), lambda g: torch.randn(3, 1 << 19, generator=g), 1),
    "amax_columns": (lambda t: t.amax(0), lambda g: torch.randn(1 << 13, 128, generator=g), 2),
    "many_columns": (lambda t: t.amax(0), lambda g: torch.randn(1 << 12, 512, generator=g), 1),
    "var_channels_last": (lambda t: t.var((0, 2, 3)), lambda g: _cl(torch.randn(32, 64, 16, 16, generator=g)), 4),
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_column_reductions_split(name):
    """A reduction to at most 256 outputs whose input's contiguous dim is kept (NOTE [Split
    reductions]) splits as a reduction to one value does: its partials in a kernel across
    threads, then their combination (a variance: its mean and its sum of squares, each
    split). Rows reduced (a contiguous NCHW tensor's statistics) or more outputs: one
    kernel, as before."""
    fn, make, kernels = COLUMNS[name]
    t = make(torch.Generator().manual_seed(4))
    tl = t.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    got = fn(tl).cpu()
    assert loom.metrics()["kernels_run"] == kernels
    torch.testing.assert_close(got, fn(t), rtol=1e-4, atol=1e-5)


def test_reductions_that_do_not_split():
    # no reduced dim divisible by 16: one kernel, one thread
    x = torch.rand(4099, 1031)
    xl = x.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    torch.testing.assert_close(xl.sum().cpu(), x.sum(), rtol=1e-5, atol=0)
    assert loom.metrics()["kernels_run"] == 1
    # below 2^19 elements: one kernel
    loom.reset_metrics()
    torch.testing.assert_close(xl[:496].sum().cpu(), x[:496].sum(), rtol=1e-5, atol=0)
    assert loom.metrics()["kernels_run"] == 1
    loom.reset_metrics()
    torch.testing.assert_close(xl[:512].sum().cpu(), x[:512].sum(), rtol=1e-5, atol=0)
    assert loom.metrics()["kernels_run"] == 2


@pytest.mark.parametrize("fn,kernels", [
    (lambda t: t.sum(0).pow(2).sum(), 2),
    (lambda t: (t.sum(1) * 2).amax(), 2),
    (lambda t: torch.linalg.vector_norm(t.sum(0) + 1), 2),
    (lambda t: t.sum(1).sum(0, keepdim=True), 2),
    # statistics per row, read through a broadcast, still fuse into the row's reduction
    (lambda t: (t - t.mean(1, keepdim=True)).pow(2).sum(1), 1),
    (lambda t: t.sum(1, keepdim=True).expand(-1, 4).sum(1), 1),
], ids=["sum_of_column_sums", "max_of_row_sums", "norm", "keepdim", "row_statistic",
        "broadcast_row_sum"])
def test_nested_reductions_store_the_inner_one_first(fn, kernels):
    """NOTE [Nested reductions]: a temporary computed by a reduction per element, read by a
    reduction with fewer outputs, is computed by a kernel of its own (across threads)
    instead of inside the outer reduction's loop."""
    x = make(torch.float32, (64, 48), seed=4)
    xl = x.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    got = fn(xl)
    loom.sync()
    assert loom.metrics()["kernels_run"] == kernels
    torch.testing.assert_close(got.cpu(), fn(x), rtol=1e-5, atol=1e-4)


def test_nested_reduction_of_a_superseded_write():
    """A gradient-like buffer whose `+=` of a column sum is superseded by `zero_()` before
    its norm is realized (a training loop running ahead of its kernels): the norm and the
    buffer match the CPU."""
    x = make(torch.float32, (64, 48), seed=5)
    res = []
    for dev in ("cpu", loom.device):
        g = torch.zeros(48, device=dev)
        g += x.to(dev).sum(0)
        n = g.norm()
        g.zero_()
        res.append((n.cpu(), g.cpu()))
    torch.testing.assert_close(res[1][0], res[0][0])
    assert torch.equal(res[1][1], res[0][1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16,
                                   torch.complex64], ids=str)
def test_scans_along_outer_axes_in_blocks(dtype, tmp_path):
    """A scan along an axis other than the innermost advances a block of outputs a row at a
    time (NOTE [Scan tiles]); each output takes its elements in the same order, so the
    values are those of the same scan along the innermost axis of the transposed copy, bit
    for bit, and the CPU's within rounding."""
    g = torch.Generator().manual_seed(2)
    base = torch.randn(300, 517, generator=g)
    x = (base * 3).to(dtype) if dtype != torch.int64 else (base * 3).to(dtype) % 5 + 1
    if dtype == torch.complex64:
        x = torch.complex(base, base.flip(0)) * 0.5
    x3 = x[:40].reshape(8, 5, 517)
    xl, x3l = x.to(loom.device), x3.to(loom.device)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-3)
    for fn in (torch.cumsum, torch.cumprod):
        if fn is torch.cumprod:  # 40 rows, of factors that keep the products in range
            x = x[:40] % 2 + 1 if dtype == torch.int64 else x[:40] / 2
            xl = x.to(loom.device)
        got = fn(xl, 0)
        by_rows = fn(xl.t().contiguous(), 1).t()
        assert torch.equal(got.cpu(), by_rows.cpu())
        torch.testing.assert_close(got.cpu(), fn(x, 0), **tol)
        got3 = fn(x3l, 1).cpu()
        assert torch.equal(got3, fn(x3l.transpose(1, 2).contiguous(), 2).transpose(1, 2).cpu())
        torch.testing.assert_close(got3, fn(x3, 1), **tol)
    prog = ("import torch, loom\n"
            "x = torch.randn(64, 100).to(loom.device)\n"
            "assert torch.allclose(x.cumsum(0).cpu(), x.cpu().cumsum(0), atol=1e-4)\n")
    kernels = [k for k in kernel_sources(prog, tmp_path) if "acc" in k]
    assert len(kernels) == 1 and "LOOM_IVDEP" in kernels[0] and "x0b" in kernels[0], kernels


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_logcumsumexp_rows_advance_together(dtype, tmp_path):
    """A logcumsumexp along the innermost axis advances blocks of rows together (NOTE [Scan
    tiles]): each row's values are those of the same row scanned alone, bit for bit, and
    the CPU's within rounding; infinities and NaN as the CPU's."""
    g = torch.Generator().manual_seed(8)
    x = (torch.randn(37, 300, generator=g) * 20).to(dtype)
    x[3, 5], x[4, 0], x[5, 7] = float("inf"), float("-inf"), float("nan")
    xl = x.to(loom.device)
    got = torch.logcumsumexp(xl, 1).cpu()
    by_row = torch.stack([torch.logcumsumexp(xl[i], 0).cpu() for i in range(37)])
    assert torch.equal(got.nan_to_num(7.5), by_row.nan_to_num(7.5))
    torch.testing.assert_close(got, torch.logcumsumexp(x, 1), rtol=1e-5, atol=1e-5, equal_nan=True)
    prog = ("import torch, loom\n"
            "x = torch.randn(64, 100).to(loom.device)\n"
            "assert torch.allclose(x.logcumsumexp(1).cpu(), x.cpu().logcumsumexp(1), atol=1e-5)\n")
    kernels = kernel_sources(prog, tmp_path)
    # One kernel: the double accumulator's rows in blocks, each element rounded as stored.
    assert len(kernels) == 1 and "x0b" in kernels[0] and "loom_lae(" in kernels[0], kernels


@pytest.mark.parametrize("shape,dim", [((1 << 21,), None), ((32, 64, 32, 32), (0, 2, 3)),
                                       ((65536, 64), 0), ((64, 65536), 1), ((4096, 4096), 0),
                                       ((3, 1 << 19), None)])
def test_float_sums_are_blocked(shape, dim):
    """Float sums restart each accumulator every few dozen elements into a running sum (NOTE
    [Blocked sums]): over a constant, whose roundings all lean one way, the sum stays within
    a few roundings of the exact one, as the CPU's cascade sum does (accumulated in order,
    2M floats of 1.0001 summed 88 off, 4e-5)."""
    x = torch.full(shape, 1.0001)
    exact = x.double().sum() if dim is None else x.double().sum(dim)
    xl = x.to(loom.device)
    got = (xl.sum() if dim is None else xl.sum(dim)).cpu().double()
    assert ((got - exact).abs() / exact).max().item() < 1e-6
    mean = (xl.mean() if dim is None else xl.mean(dim)).cpu().double()
    n = x.numel() / exact.numel()
    assert ((mean - exact / n).abs() / (exact / n)).max().item() < 1e-6


def test_batch_norm_bias_gradient_is_accurate():
    """The bias gradient of a batch norm is a per-channel sum over the batch and the plane
    (NOTE [Blocked sums]): within the CPU's error of the exact sum, not 30x it."""
    x = torch.randn(32, 64, 32, 32, generator=torch.Generator().manual_seed(3))
    grads = []
    for dev in ("cpu", loom.device):
        t = x.to(dev).requires_grad_()
        b = torch.zeros(64, device=dev, requires_grad=True)
        y = torch.nn.functional.batch_norm(t, None, None, None, b, training=True)
        grads.append(torch.autograd.grad((y * 1.0001).sum(), b)[0].cpu().double())
    exact = torch.full((64,), 32 * 32 * 32 * float(torch.tensor(1.0001)), dtype=torch.float64)
    cpu_err = (grads[0] - exact).abs().max().item()
    assert (grads[1] - exact).abs().max().item() <= max(4 * cpu_err, 0.01)


def test_short_rows_reduce_as_lanes(tmp_path):
    """A reduction over 16-63 elements (a softmax over 32 classes) runs as 8-16 vector
    lanes, where it ran one element at a time (65536x32 softmax 5.9 -> 0.75 ms)."""
    prog = ("import torch, loom\n"
            "x = torch.randn(512, 32)\n"
            "torch.testing.assert_close(x.to(loom.device).softmax(-1).cpu(), x.softmax(-1))\n"
            "y = torch.randn(512, 20)\n"
            "torch.testing.assert_close(y.to(loom.device).sum(1).cpu(), y.sum(1))\n")
    kernels = kernel_sources(prog, tmp_path)
    assert any("LOOM_LANES(16)" in k for k in kernels)
    assert any("LOOM_LANES(8)" in k for k in kernels)
