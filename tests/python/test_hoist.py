"""Reductions read back through a broadcast (softmax's row max and sum, layer norm's
statistics) are computed once per row inside the kernel that uses them; when the loop
order does not allow that, they are computed by a kernel of their own. Values and kernel
counts against CPU torch."""
import pytest
import torch

import loom


def run(fn, x):
    """fn on Loom: (result on the CPU, kernels run), from a realized input."""
    xl = x.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    r = fn(xl).cpu()
    m = loom.metrics()
    assert m["fallbacks"] == {}
    return r, m["kernels_run"]


CASES = [
    # name, fn, kernels
    ("softmax rows", lambda t: torch.softmax(t, 1), 1),
    ("log_softmax rows", lambda t: torch.log_softmax(t, 1), 1),
    ("softmax cols", lambda t: torch.softmax(t, 0), 3),
    ("softmax of transposed", lambda t: torch.softmax(t.t(), 1), 1),
    ("center rows", lambda t: t - t.mean(1, keepdim=True), 1),
    ("center cols", lambda t: t - t.mean(0, keepdim=True), 2),
    # a reduction no output loop varies, before the loops (NOTE [Whole reductions])
    ("center all", lambda t: t - t.mean(), 1),
    ("var rows", lambda t: t.var(1), 1),
    ("normalize rows", lambda t: (t - t.mean(1, keepdim=True)) / t.std(1, keepdim=True), 1),
    ("max then scale", lambda t: t * t.amax(1, keepdim=True).reciprocal() + t.sum(1, True), 1),
    # the column sum cannot be computed once per row: both are computed apart
    ("row sum times col sum", lambda t: t.sum(1, keepdim=True) * t.sum(0, keepdim=True), 3),
    ("squeezed sum then add", lambda t: t.amax(0) + 1, 1),
]


@pytest.mark.parametrize("name,fn,kernels", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("shape", [(37, 100), (64, 64), (5, 1000)])
def test_hoisted_reductions(name, fn, kernels, shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(shape[1])) * 4
    got, n = run(fn, x)
    torch.testing.assert_close(got, fn(x), rtol=1e-4, atol=1e-4)
    assert n == kernels


def test_3d_softmax_and_inner_dims():
    x = torch.randn(6, 7, 50)
    for fn, kernels in ((lambda t: torch.softmax(t, 2), 1),
                        (lambda t: torch.softmax(t, 1), None),
                        (lambda t: t - t.mean((1, 2), keepdim=True), 1),
                        (lambda t: t - t.amax(1, keepdim=True), None)):
        got, n = run(fn, x)
        torch.testing.assert_close(got, fn(x), rtol=1e-5, atol=1e-5)
        if kernels is not None:
            assert n == kernels


def test_softmax_into_transposed_out():
    x = torch.randn(40, 30)
    out = torch.empty(30, 40, device=loom.device).t()
    out.copy_(torch.softmax(x.to(loom.device), 1))  # stored column by column
    torch.testing.assert_close(out.cpu(), torch.softmax(x, 1), rtol=1e-5, atol=1e-6)


def test_softmax_special_values():
    x = torch.randn(8, 70)
    x[0] = float("-inf")
    x[1, 3] = float("inf")
    x[2, 5] = float("nan")
    x[3, :] = 1e30
    got, n = run(lambda t: torch.softmax(t, 1), x)
    torch.testing.assert_close(got, torch.softmax(x, 1), equal_nan=True)
    assert n == 1


@pytest.mark.parametrize("n", [1, 33, 100, 4096, 20000])
def test_softmax_reads_its_exps_back(n):
    """The output loop reuses the row of exp(x - max) that the sum computed (up to 64 KB
    of row); values as on the CPU either way."""
    x = torch.randn(3, n, generator=torch.Generator().manual_seed(n)) * 3
    for fn in (lambda t: torch.softmax(t, 1), lambda t: torch.exp(t - t.amax(1, True)) /
               torch.exp(t - t.amax(1, True)).sum(1, True), lambda t: torch.softmax(t * 2, 1) + t):
        got, k = run(fn, x)
        torch.testing.assert_close(got, fn(x), rtol=1e-5, atol=1e-6)
        assert k == 1


@pytest.mark.parametrize("cols", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_row_value_from_a_masked_row_under_a_short_loop(cols, dtype):
    """NOTE [gcc 12 peeled-loop SLP]: a row sum of a masked_fill'd quotient, read by each
    element of a short row of another tensor (the shape of cdist's gradient). gcc 12.2
    vectorized the peeled loop with the shared row value loaded past the end of its row."""
    g = torch.Generator().manual_seed(cols)
    x = torch.randn(7, cols, generator=g, dtype=dtype)
    res = torch.rand(7, 3, generator=g, dtype=dtype) + 0.5
    res[2, 1] = 0
    go = torch.randn(7, 3, generator=g, dtype=dtype)

    def fn(go, res, x):
        ratio = go / res
        ratio.masked_fill_(res == 0, 0)
        return x * ratio.sum(-1, True)

    want = fn(go, res, x)
    got = fn(go.to(loom.device), res.to(loom.device), x.to(loom.device)).cpu()
    torch.testing.assert_close(got, want)


WHOLE = [
    ("softmax", lambda t: torch.softmax(t, -1)),
    ("log_softmax", lambda t: torch.log_softmax(t, -1)),
    ("layer_norm", lambda t: torch.nn.functional.layer_norm(t, t.shape[-1:])),
    ("center", lambda t: t - t.mean()),
    ("scale by max", lambda t: t / t.abs().amax()),
    ("standardize", lambda t: (t - t.mean()) / t.std()),
    ("argmax offset", lambda t: t + t.argmax()),
    ("share of sum", lambda t: t / t.sum(dtype=torch.float64)),
]


@pytest.mark.parametrize("name,fn", WHOLE, ids=[c[0] for c in WHOLE])
@pytest.mark.parametrize("shape", [(1000,), (1, 777), (1, 1, 64), (40, 50), (1 << 16,)])
def test_whole_reductions_in_the_output_kernel(name, fn, shape):
    """NOTE [Whole reductions]: a reduction that no output loop varies (a one-row softmax
    or layer norm) is computed before the output loops of the kernel that reads it, which
    then runs as one call: one kernel where there were three."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(shape[-1])) * 3
    got, n = run(fn, x)
    torch.testing.assert_close(got, fn(x), rtol=1e-5, atol=1e-5)
    assert n == 1


@pytest.mark.parametrize("name,fn,kernels", [
    ("softmax", lambda t: torch.softmax(t, -1), 3),
    ("center", lambda t: t - t.mean(), 2),
])
def test_whole_reductions_apart_from_large_outputs(name, fn, kernels):
    """Past kWholeReduceMaxWork the output pass runs across threads, the whole reduction
    in a kernel of its own (a split reduction's partials: test_reduce.py's variance)."""
    x = torch.randn(100001, generator=torch.Generator().manual_seed(7))
    got, n = run(fn, x)
    torch.testing.assert_close(got, fn(x), rtol=1e-4, atol=1e-5)
    assert n == kernels


def test_whole_reductions_of_special_values():
    x = torch.randn(500)
    for i, v in ((3, float("nan")), (7, float("inf")), (11, float("-inf"))):
        y = x.clone()
        y[i] = v
        for fn in (lambda t: torch.softmax(t, 0), lambda t: t - t.amax(), lambda t: t * t.argmin()):
            got, n = run(fn, y)
            torch.testing.assert_close(got, fn(y), equal_nan=True)
            assert n == 1
