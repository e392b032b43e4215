"""kthvalue, median, nanmedian, cummax/cummin, searchsorted/bucketize, isin and aminmax on
Loom against the CPU: values and indices (ties and NaN included: Loom reports the CPU's
index among equal values), every dimension, keepdim, out= forms, errors and gradients.
None of them falls back to the CPU."""
import pytest
import torch

import loom
from cpu_errors import outcome_like_cpu, raises_like_cpu

D = loom.device


def run(fn, *args):
    """fn on CPU and on Loom; returns both results (tuples flattened) with no fallback."""
    want = fn(*args)
    loom.reset_metrics()
    got = fn(*[a.to(D) if isinstance(a, torch.Tensor) else a for a in args])
    assert loom.metrics()["fallbacks"] == {}
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    return [g.cpu() for g in got], list(want)


def same(fn, *args):
    got, want = run(fn, *args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


def tied(dtype, shape, seed, nan=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if nan and dtype.is_floating_point:
        x[x == 2] = float("nan")
    return x


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.float32, torch.float64,
                                   torch.bfloat16], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_matches_cpu_indices_among_ties(dtype, keepdim):
    for seed in range(12):
        x = tied(dtype, (4, 7, 5), seed, nan=seed % 3 == 0)
        for dim in (0, 1, 2, -1):
            for k in (1, 3, x.shape[dim]):
                same(lambda t: torch.kthvalue(t, k, dim, keepdim), x)
    same(lambda t: torch.kthvalue(t, 1), torch.tensor(3.0))


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int8, torch.float32, torch.float64,
                                   torch.bfloat16], ids=str)
def test_median_and_nanmedian(name, dtype):
    fn = getattr(torch, name)
    for seed in range(8):
        x = tied(dtype, (5, 6), seed, nan=seed % 2 == 0)
        same(fn, x)
        for dim in (0, 1):
            for keepdim in (False, True):
                same(lambda t: fn(t, dim, keepdim), x)
                same(lambda t: fn(t.t(), dim, keepdim), x)  # strided rows
    if dtype.is_floating_point:
        same(fn, torch.full((4,), float("nan"), dtype=dtype))
        same(lambda t: fn(t, 0), torch.full((3, 2), float("nan"), dtype=dtype))
    same(fn, torch.tensor(2, dtype=dtype))
    same(lambda t: fn(t, 0), torch.tensor(2, dtype=dtype))
    # Rows long enough for the selection to partition many times, spread over threads.
    big = tied(dtype, (40, 301), 99, nan=True)
    same(fn, big)
    for dim in (0, 1):
        same(lambda t: fn(t, dim), big)


def test_median_of_nothing_and_errors():
    same(torch.median, torch.empty(0))
    for fn, arg in [(lambda t: torch.median(t, 0), torch.empty(0, 3)),
                    (lambda t: torch.kthvalue(t, 4, 0), torch.ones(3)),
                    (lambda t: torch.kthvalue(t, 1, 0), torch.empty(0)),
                    (torch.median, torch.ones(3, dtype=torch.half)),
                    (lambda t: torch.kthvalue(t, 1), torch.ones(3, dtype=torch.bool))]:
        try:  # torch 2.x's CPU takes the median of float16
            fn(arg)
        except (RuntimeError, IndexError):
            raises_like_cpu(lambda: fn(arg), lambda: fn(arg.to(D)))
        else:
            same(fn, arg)


def test_selection_out_forms_and_gradient():
    x = torch.randn(4, 6)
    for fn in (lambda t, v, i: torch.kthvalue(t, 2, 1, out=(v, i)),
               lambda t, v, i: torch.median(t, 0, out=(v, i)),
               lambda t, v, i: torch.nanmedian(t, 1, True, out=(v, i))):
        same(lambda t: fn(t, torch.empty(0, device=t.device),
                          torch.empty(0, dtype=torch.long, device=t.device)), x)
    grads = []
    for dev in ("cpu", D):
        t = x.clone().to(dev).requires_grad_()
        (torch.kthvalue(t, 2, 1)[0].sum() + torch.median(t, 0)[0].sum() + torch.median(t)).backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int64, torch.bfloat16,
                                   torch.float32, torch.float64], ids=str)
def test_cummax_cummin(name, dtype):
    fn = getattr(torch, name)
    half = torch.tensor([1.0, 0.5, 2.0], dtype=torch.half)  # 1.13's CPU refuses it, 2.x's takes it
    outcome_like_cpu(lambda: fn(half, 0), lambda: fn(half.to(D), 0))
    for seed in range(6):
        x = tied(dtype, (5, 9), seed, nan=seed % 2 == 1) if dtype != torch.bool else \
            torch.rand(5, 9, generator=torch.Generator().manual_seed(seed)) > 0.5
        for dim in (0, 1):
            same(lambda t: fn(t, dim), x)
            same(lambda t: fn(t.t(), dim), x)
    same(lambda t: fn(t, 0), torch.tensor(1, dtype=dtype))
    same(lambda t: fn(t, 0), torch.empty(0, dtype=dtype))
    same(lambda t: fn(t, 1, out=(torch.empty(0, dtype=dtype, device=t.device),
                                 torch.empty(0, dtype=torch.long, device=t.device))),
         tied(dtype, (3, 4), 9) if dtype != torch.bool else torch.ones(3, 4, dtype=torch.bool))


def test_cummax_gradient():
    x = torch.randn(4, 8, dtype=torch.float64)
    grads = []
    for dev in ("cpu", D):
        t = x.clone().to(dev).requires_grad_()
        (torch.cummax(t, 1)[0] * torch.arange(8.0, dtype=torch.float64, device=dev)).sum().backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("int32", [False, True])
def test_searchsorted_and_bucketize(right, int32):
    seq = torch.tensor([-2.0, -1.0, -1.0, 0.0, 0.5, 3.0])
    v = torch.tensor([[-3.0, -1.0, 0.25], [3.0, 7.0, 0.0]])
    kw = dict(out_int32=int32, right=right)
    same(lambda s, x: torch.searchsorted(s, x, **kw), seq, v)
    same(lambda s, x: torch.bucketize(x, s, **kw), seq, v)
    same(lambda s: torch.searchsorted(s, 0.5, **kw), seq)
    same(lambda s: torch.bucketize(-1, s, **kw), seq)
    rows = torch.sort(torch.randn(2, 3, 8), dim=-1)[0]
    vals = torch.randn(2, 3, 5)
    same(lambda s, x: torch.searchsorted(s, x, **kw), rows, vals)
    same(lambda s, x: torch.searchsorted(s, x, side="right" if right else "left"), rows, vals)
    perm = torch.stack([torch.stack([torch.randperm(8) for _ in range(3)]) for _ in range(2)])
    shuffled = rows.gather(-1, perm)
    same(lambda s, x, p: torch.searchsorted(s, x, sorter=p.argsort(-1), **kw), shuffled, vals, perm)
    same(lambda s, x: torch.searchsorted(s, x, **kw), torch.arange(10), torch.tensor([3.5, -1.0]))
    same(lambda s, x: torch.searchsorted(
        s, x, out=torch.empty(0, dtype=torch.int32 if int32 else torch.long, device=s.device), **kw),
        seq, v)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_is_the_cpus_binary_search(right):
    """NOTE [Binary search]: the CPU's search steps, unrolled: its answers even for
    boundaries out of order or holding NaN, with duplicates, mixed dtypes, lengths around
    powers of two; one kernel for a large search."""
    g = torch.Generator().manual_seed(5)
    for m in (1, 2, 3, 7, 8, 9, 64, 65, 1000):
        vals = torch.randn(300, generator=g)
        same(lambda s, x: torch.searchsorted(s, x, right=right), torch.randn(m, generator=g).sort()[0], vals)
        same(lambda s, x: torch.searchsorted(s, x, right=right), torch.randn(m, generator=g), vals)  # unsorted
    nan_bd = torch.tensor([0.0, float("nan"), 1.0, 2.0, float("nan"), 3.0])
    same(lambda s, x: torch.searchsorted(s, x, right=right), nan_bd, torch.tensor([-1.0, 0.5, 2.0, 9.0, float("nan")]))
    dup = torch.tensor([1, 2, 2, 2, 2, 3, 5], dtype=torch.int32)
    same(lambda s, x: torch.searchsorted(s, x, right=right), dup, torch.tensor([2.0, 2.5, 0.0, 5.0, 6.0]))
    same(lambda s, x: torch.bucketize(x, s, right=right), dup.to(torch.int64), torch.arange(7))
    big, x = torch.randn(1 << 16, generator=g).sort()[0], torch.randn(1 << 14, generator=g)
    loom.reset_metrics()
    same(lambda s, x: torch.searchsorted(s, x, right=right), big, x)
    assert loom.metrics()["kernels_run"] == 1


def test_search_kernel_loop_is_marked_independent(tmp_path):
    """NOTE [One-loop kernels]: a kernel whose outputs form one loop marks it free of
    dependences between iterations, as deeper nests' innermost loops are: clang's cost model
    kept the binary search's gathers scalar without it (7.1 -> 1.3 ms over 256K values)."""
    from kernel_text import kernel_sources
    prog = ("import torch, loom\n"
            "s = torch.arange(0.0, 1000.0).to(loom.device)\n"
            "x = torch.rand(5000).mul(1000).to(loom.device)\n"
            "torch.searchsorted(s, x).cpu()\n")
    kernels = [k for k in kernel_sources(prog, tmp_path) if "int64_t* restrict p0" in k]
    assert len(kernels) == 1 and "LOOM_IVDEP\n  for (int64_t x0 = start" in kernels[0], kernels


def test_searchsorted_sorter_out_of_range_raises():
    seq, x = torch.tensor([1.0, 2.0, 3.0], device=D), torch.tensor([2.5], device=D)
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        torch.searchsorted(seq, x, sorter=torch.tensor([0, 3, 1], device=D)).cpu()
    shuffled = torch.tensor([3.0, 1.0, 2.0], device=D)
    assert torch.searchsorted(shuffled, x, sorter=torch.tensor([1, 2, 0], device=D)).cpu().tolist() == [2]


def test_search_errors():
    for fn, args in [(lambda s, x: torch.bucketize(x, s), (torch.ones(2, 3), torch.ones(3))),
                     (lambda s, x: torch.searchsorted(s, x), (torch.ones(2, 3), torch.ones(3, 3))),
                     (lambda s, x: torch.searchsorted(s, x, side="left", right=True),
                      (torch.ones(3), torch.ones(2)))]:
        raises_like_cpu(lambda: fn(*args), lambda: fn(*[a.to(D) for a in args]))


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    e = torch.tensor([[1.0, 2.0, float("nan")], [4.0, 5.0, 2.0]])
    t = torch.tensor([2.0, float("nan"), 5.0])
    same(lambda a, b: torch.isin(a, b, invert=invert), e, t)
    same(lambda a, b: torch.isin(a, b, invert=invert), torch.arange(10), torch.tensor([3, 7, 7]))
    same(lambda a: torch.isin(a, 2.0, invert=invert), e)
    same(lambda b: torch.isin(4, b, invert=invert), torch.arange(6))
    same(lambda a, b: torch.isin(a, b, invert=invert), torch.arange(5), torch.empty(0, dtype=torch.long))
    same(lambda a, b: torch.isin(a, b, out=torch.empty(0, dtype=torch.bool, device=a.device)), e, t)


@pytest.mark.parametrize("invert", [False, True])
def test_isin_large_test_set_searches(invert):
    """NOTE [isin by search]: beyond 64 test elements they are sorted and searched: the
    CPU's answers with NaN among the test elements, -0.0, duplicates and mixed dtypes, in
    one fused kernel after the sort. A NaN element is in nothing, as with few test
    elements (the CPU's sorting path answers True or False for it depending on where it
    lies among the elements)."""
    g = torch.Generator().manual_seed(6)
    e = torch.randint(-50, 50, (40, 30), generator=g).float()
    e[0, :3] = torch.tensor([-0.0, 0.0, float("inf")])
    t = torch.randint(-50, 50, (500,), generator=g).float()
    t[:3] = torch.tensor([float("nan"), 0.0, float("inf")])
    same(lambda a, b: torch.isin(a, b, invert=invert), e, t)
    same(lambda a, b: torch.isin(a, b, invert=invert), e.long(), t)  # mixed dtypes promote
    same(lambda a, b: torch.isin(a, b, invert=invert), e.int(), t[3:].long())
    same(lambda a, b: torch.isin(a, b, invert=invert), e, t[:70].view(7, 10))
    same(lambda a, b: torch.isin(a, b, invert=invert), e[:, 5:9], torch.full((100,), float("nan")))
    e[5, 5] = float("nan")
    el, tl = e.to(D), t.to(D)
    loom.sync()
    loom.reset_metrics()
    got = torch.isin(el, tl, invert=invert).cpu()
    m = loom.metrics()
    assert (m["kernels_run"], m["extern_calls"]) == (2, 1)  # the sort, its values stored; the search
    assert got[5, 5].item() == invert
    e[5, 5] = 0.5
    got[5, 5] = invert
    assert torch.equal(got, torch.isin(e, t, invert=invert))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float32], ids=str)
def test_aminmax(dtype):
    x = tied(dtype, (4, 5), 3) if dtype != torch.bool else torch.rand(4, 5) > 0.3
    same(torch.aminmax, x)
    for dim in (0, 1):
        for keepdim in (False, True):
            same(lambda t: torch.aminmax(t, dim=dim, keepdim=keepdim), x)
    same(lambda t: torch.aminmax(t, keepdim=True), x)
    # torch 1.13's CPU resizes a 0-dim result to one element, with resize_output's warning;
    # later releases keep it 0-dim.
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resized = torch.aminmax(x[0, 0], dim=0, keepdim=True)[0].dim() == 1
    assert bool(caught) == resized
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        same(lambda t: torch.aminmax(t, dim=0, keepdim=True), x[0, 0])
    assert bool(caught) == resized


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_histc(dtype):
    x = torch.cat([torch.randn(300) * 2, torch.tensor([0.0, 1.0, -1.0, 3.0])]).to(dtype)
    same(torch.histc, x)  # the data's own range (realized)
    x = torch.cat([x, torch.tensor([float("nan")], dtype=dtype)])
    same(lambda t: torch.histc(t, bins=7, min=-1, max=1), x)  # edges and the right one included
    same(lambda t: torch.histc(t, bins=4, min=0.5, max=0.5), torch.full((3,), 0.5, dtype=dtype))
    same(lambda t: torch.histc(t, bins=5, min=-2, max=2, out=torch.empty(0, dtype=dtype, device=t.device)), x)
    same(lambda t: torch.histc(t, bins=3), torch.empty(0, dtype=dtype))
    if dtype == torch.bfloat16 and BF16_HISTC_SATURATES:
        return  # bins past 256: test_histc_bfloat16_counts_past_256
    # Counted in chunks across threads (float32/float64): a transposed input, every bin
    # edge hit, NaN in the middle.
    big = torch.cat([torch.randn(120_000) * 3, torch.linspace(-1, 1, 20_001),
                     torch.tensor([float("nan")] * 199)]).to(dtype)
    big = big[torch.randperm(big.numel(), generator=torch.Generator().manual_seed(0))]
    same(lambda t: torch.histc(t.view(200, -1).t(), bins=100, min=-1, max=1), big)
    same(lambda t: torch.histc(t[t == t], bins=37), big)


# The CPU's histc counts bfloat16 input in bfloat16, where 256 + 1 is 256: a bin stops at 256
# (1.13), or at 256 per thread (2.x). Loom counts exactly and rounds each count once.
BF16_HISTC_SATURATES = torch.histc(torch.zeros(600, dtype=torch.bfloat16), bins=1, min=-1,
                                   max=1).item() != 600


@pytest.mark.skipif(not BF16_HISTC_SATURATES, reason="the CPU counts bfloat16 exactly")
def test_histc_bfloat16_counts_past_256():
    # The CPU's own bins (its bfloat16 position rule) for chunks of 256 values, whose
    # counts it keeps exact, summed in float32: Loom's counts, rounded once.
    big = torch.cat([torch.randn(120_000) * 3, torch.linspace(-1, 1, 20_001),
                     torch.tensor([float("nan")] * 199)]).to(torch.bfloat16)
    big = big[torch.randperm(big.numel(), generator=torch.Generator().manual_seed(0))]
    finite = big[big == big]
    lo, hi = finite.min().item(), finite.max().item()
    for t, bins, lo, hi in ((big.view(200, -1).t(), 100, -1, 1), (finite, 37, lo, hi)):
        parts = [torch.histc(c, bins, lo, hi).float() for c in t.reshape(-1).split(256)]
        want = torch.stack(parts).sum(0)
        assert want.max() > 256
        got = torch.histc(t.to(D), bins, lo, hi).cpu()
        torch.testing.assert_close(got, want.to(torch.bfloat16), rtol=0, atol=0)
        if t is finite:  # min == max: the data's own range
            torch.testing.assert_close(torch.histc(t.to(D), bins).cpu(), got, rtol=0, atol=0)


def test_histc_errors():
    for fn, arg in [(lambda t: torch.histc(t), torch.arange(5)),
                    (lambda t: torch.histc(t, bins=0), torch.rand(5)),
                    (lambda t: torch.histc(t), torch.tensor([1.0, float("inf")])),
                    (lambda t: torch.histc(t, min=2, max=1), torch.rand(3))]:
        raises_like_cpu(lambda: fn(arg), lambda: fn(arg.to(D)))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int64, torch.bfloat16, torch.float32], ids=str)
def test_mode_matches_cpu_indices(dtype):
    for seed in range(10):
        x = tied(dtype, (3, 11), seed, nan=seed % 3 == 0) if dtype != torch.bool else \
            torch.rand(3, 11, generator=torch.Generator().manual_seed(seed)) > 0.5
        for dim in (0, 1):
            for keepdim in (False, True):
                same(lambda t: torch.mode(t, dim, keepdim), x)
                same(lambda t: torch.mode(t, dim, keepdim), x.t().contiguous().t())
    same(lambda t: torch.mode(t, 0), torch.tensor(3, dtype=dtype))
    same(lambda t: torch.mode(t, 1), torch.empty(0, 4, dtype=dtype))
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.mode(torch.empty(3, 0, dtype=dtype, device=D), 1)


def test_mode_out():
    x = tied(torch.float32, (7, 9), 3, nan=False)
    # Into a column of a bigger tensor (mode along dim 1) and into its first row (dim 0,
    # keepdim): the CPU computes and copies into them.
    for dim, keepdim, part in ((1, False, (slice(None), 1)), (0, True, slice(0, 1))):
        ref = (torch.full((7, 9), -1.0), torch.full((7, 9), -1, dtype=torch.long))
        got = tuple(t.to(D) for t in ref)
        torch.mode(x, dim, keepdim, out=(ref[0][part], ref[1][part]))
        torch.mode(x.to(D), dim, keepdim, out=(got[0][part], got[1][part]))
        for a, b in zip(got, ref):
            assert torch.equal(a.cpu(), b)
    v, i = torch.empty(0, device=D), torch.empty(0, dtype=torch.long, device=D)
    r = torch.mode(x.to(D), 1, out=(v, i))
    assert r.values is v and r.indices is i and v.shape == (7,)
    for bad in [lambda d: (torch.empty(0, device=d, dtype=torch.float64),
                           torch.empty(0, device=d, dtype=torch.long)),
                lambda d: (torch.empty(0, device=d), torch.empty(0, device=d, dtype=torch.int32))]:
        raises_like_cpu(lambda: torch.mode(x, 1, out=bad("cpu")),
                        lambda: torch.mode(x.to(D), 1, out=bad(D)))


def compare_histograms(fn, x, w, calls):
    """fn (histogram or histogramdd) on Loom against the CPU, for each (bins, kwargs) of
    calls, weighted or not, as densities or not: the counts, and the edges to an ulp (a
    bin count's edges come from linspace)."""
    def on_loom(v):
        if isinstance(v, torch.Tensor):
            return v.to(loom.device)
        if isinstance(v, (list, tuple)) and v and isinstance(v[0], torch.Tensor):
            return [t.to(loom.device) for t in v]
        return v

    for bins, kw in calls:
        for weighted in (False, True):
            for density in (False, True):
                args = dict(kw, weight=w if weighted else None, density=density)
                want = fn(x, bins, **args)
                got = fn(x.to(loom.device), on_loom(bins), **{k: on_loom(v) for k, v in args.items()})
                torch.testing.assert_close(got.hist.cpu(), want.hist, equal_nan=True)
                got_edges = got.bin_edges if isinstance(got.bin_edges, (list, tuple)) else [got.bin_edges]
                want_edges = want.bin_edges if isinstance(want.bin_edges, (list, tuple)) else [want.bin_edges]
                for a, b in zip(got_edges, want_edges):
                    torch.testing.assert_close(a.cpu(), b, rtol=1e-6, atol=0)
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(100,), (7, 9), (0,), (1,)])
def test_histogram(dtype, shape):
    # Bin counts (weighted or not, as densities or not) over a bin count with or without a
    # range, and over explicit edges, against the CPU's. The edges of a bin count come from
    # Loom's linspace, which can differ from the CPU's by an ulp.
    loom.reset_metrics()
    g = torch.Generator().manual_seed(len(shape))
    x = (torch.randn(shape, generator=g) * 3).to(dtype)
    if x.numel() > 3:
        x.view(-1)[:3] = torch.tensor([0.1, 0.7, 2.0], dtype=dtype)
    w = torch.rand(shape, generator=g).to(dtype)
    edges = torch.tensor([-2.0, 0.1, 0.7, 0.7001, 2.0, 5.0], dtype=dtype)
    calls = []
    for bins in (1, 5, 10):
        for rng in (None, (0.0, 2.0), (-1.0, 1.0)):
            calls.append((bins, dict(range=rng)))
    calls.append((edges, {}))
    compare_histograms(torch.histogram, x, w, calls)


@pytest.mark.parametrize("bad", [
    lambda d: torch.histogram(torch.ones(3, dtype=torch.long, device=d), 4),
    lambda d: torch.histogram(torch.ones(3, device=d), 0),
    lambda d: torch.histogram(torch.ones(3, device=d), 4, range=(2.0, 1.0)),
    lambda d: torch.histogram(torch.ones(3, device=d), 4, range=(0.0, float("inf"))),
    lambda d: torch.histogram(torch.tensor([1.0, float("nan")], device=d), 4),
    lambda d: torch.histogram(torch.ones(3, device=d), 4, weight=torch.ones(2, device=d)),
    lambda d: torch.histogram(torch.ones(3, device=d), 4, weight=torch.ones(3, dtype=torch.float64, device=d)),
    lambda d: torch.histogram(torch.ones(3, device=d), torch.ones(2, 2, device=d)),
    lambda d: torch.histogram(torch.ones(3, device=d), torch.ones(3, dtype=torch.float64, device=d)),
])
def test_histogram_errors(bad):
    raises_like_cpu(lambda: bad("cpu"), lambda: bad(loom.device))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(40, 2), (3, 5, 3), (0, 2), (1, 1)])
def test_histogramdd(dtype, shape):
    # Bin counts per dimension (with and without a range), explicit edges (in order and
    # not: the CPU's binary search decides), weights and densities, against the CPU's.
    loom.reset_metrics()
    g = torch.Generator().manual_seed(shape[0])
    x = (torch.randn(shape, generator=g) * 2).to(dtype)
    w = torch.rand(shape[:-1], generator=g).to(dtype)
    n = shape[-1]
    counts = [2, 3, 4][:n]
    edges = [torch.tensor([-3.0, -0.5, 0.0, 1.0, 3.0], dtype=dtype),
             torch.tensor([-1.0, 2.0, 0.5, 4.0], dtype=dtype),
             torch.tensor([-2.0, 2.0], dtype=dtype)][:n]
    calls = [(counts, {}), (counts, dict(range=[-1.0, 1.0] * n)), (edges, {})]
    compare_histograms(torch.histogramdd, x, w, calls)


@pytest.mark.parametrize("bad", [
    lambda d: torch.histogramdd(torch.ones(3, 2, dtype=torch.long, device=d), [2, 2]),
    lambda d: torch.histogramdd(torch.ones(3, 2, device=d), [2, 2], range=[0.0, 1.0]),
    lambda d: torch.histogramdd(torch.ones(3, 2, device=d), [2, 2], weight=torch.ones(2, device=d)),
    lambda d: torch.histogramdd(torch.ones(3, 2, device=d), [torch.ones(2, device=d)]),
    lambda d: torch.histogramdd(torch.ones(3, 2, device=d), [torch.ones(2, device=d), torch.ones(0, device=d)]),
])
def test_histogramdd_errors(bad):
    raises_like_cpu(lambda: bad("cpu"), lambda: bad(loom.device))


# Which dtypes these ops take comes from the running torch's CPU (2.x added float16 to
# several): Loom computes what it computes, equal to it, and raises its error at the op
# for the rest (sort's refusal of complex was raised only at a later wait).
DTYPE_OPS = {
    "cummax": lambda t: torch.cummax(t, 1),
    "cummin": lambda t: torch.cummin(t, 0),
    "kthvalue": lambda t: torch.kthvalue(t, 2, 1),
    "histc": lambda t: torch.histc(t, 4, -1, 1),
    "glu": lambda t: torch.nn.functional.glu(t, 1),
    "glu_backward": lambda t: torch.ops.aten.glu_backward(t[:, :2], t, 1),
    "sort": lambda t: torch.sort(t, 1),
    "topk": lambda t: torch.topk(t, 2, 0),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.bool, torch.int32,
                                   torch.complex64], ids=str)
@pytest.mark.parametrize("name", list(DTYPE_OPS))
def test_dtypes_as_cpu(name, dtype):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 4, generator=g, dtype=torch.float64)
    x = (x > 0) if dtype == torch.bool else x.to(dtype)
    fn = DTYPE_OPS[name]
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    outcome_like_cpu(lambda: fn(x), lambda: fn(x.to(D)), **tol)
