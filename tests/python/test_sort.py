"""sort/argsort/msort/topk against CPU torch: values, stable indices, NaN order, layouts."""
import pytest
import torch

import loom
from cpu_errors import raises_like_cpu

D = loom.device


def sample(dtype, shape=(5, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float64)
    if dtype.is_floating_point:
        t = t.to(dtype)
        t[1, 2] = float("nan")
        t[2, :3] = 1.0  # ties
        return t
    if dtype == torch.bool:
        return t > 0
    return (t * 3).round().to(dtype)


DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.uint8, torch.bool]


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    torch.testing.assert_close(b.cpu(), a, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort(dtype, dim, descending):
    x = sample(dtype)
    for layout in (lambda t: t, lambda t: t.t().contiguous().t()):
        want = torch.sort(layout(x), dim=dim, descending=descending, stable=True)
        loom.reset_metrics()
        got = torch.sort(layout(x.to(D)), dim=dim, descending=descending, stable=True)
        same(want.values, got.values)
        same(want.indices, got.indices)
        assert got.values.stride() == want.values.stride()
        assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_of_many_rows(dim, descending):
    """Rows sort across threads (ops_sort.cpp): many short rows with ties and NaNs, along
    the inner dim and along the outer one, keep the CPU's stable order."""
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 6, (700, 300), generator=g).float()
    x[torch.rand(x.shape, generator=g) < 0.05] = float("nan")
    want = torch.sort(x, dim=dim, descending=descending, stable=True)
    got = torch.sort(x.to(D), dim=dim, descending=descending, stable=True)
    same(want.values, got.values)
    same(want.indices, got.indices)
    top = torch.topk(x.to(D), 7, dim=dim, largest=descending)
    same(torch.topk(x, 7, dim=dim, largest=descending).values, top.values)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_radix_sorted_rows_match_cpu(dtype, descending):
    """Rows of 256 or more sort by radix (NOTE [Radix sort]): the CPU's stable order with
    ties, -0.0 beside 0.0 in input order, NaN of either sign last (first descending),
    infinities, both signs of integers and a wide range."""
    g = torch.Generator().manual_seed(2)
    x = sample(dtype, (3, 1000), seed=3)
    if dtype.is_floating_point:
        x[0, :6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 0.0, -0.0]).to(dtype)
        x[1, 10:20] = -torch.tensor(float("nan")).to(dtype)  # negative NaN
        x[2] = (torch.randn(1000, generator=g) * 1e4).to(dtype)
    elif dtype not in (torch.bool, torch.uint8):
        x[2] = torch.randint(-(2 ** 20), 2 ** 20, (1000,), generator=g).to(dtype)
    for dim, layout in ((1, lambda t: t), (0, lambda t: t.t())):
        want = torch.sort(layout(x), dim=dim, descending=descending, stable=True)
        got = torch.sort(layout(x.to(D)), dim=dim, descending=descending, stable=True)
        same(want.values, got.values)
        same(want.indices, got.indices)
        if dtype.is_floating_point:  # zeros keep their signs, in input order
            assert torch.equal(torch.signbit(got.values.cpu()), torch.signbit(want.values))
    if dtype not in (torch.bool, torch.float16):  # the CPU's topk has neither
        # A top eighth or more of a row is the head of the row's radix sort.
        want = torch.topk(x, 300, dim=1, largest=descending)
        got = torch.topk(x.to(D), 300, dim=1, largest=descending)
        same(want.values, got.values)
        same(x.gather(1, got.indices.cpu()), got.values)


def test_argsort_msort_and_out():
    x = sample(torch.float32)
    same(torch.argsort(x, stable=True, dim=1), torch.argsort(x.to(D), stable=True, dim=1))
    same(torch.msort(x), torch.msort(x.to(D)))
    v, i = torch.empty(0, device=D), torch.empty(0, dtype=torch.long, device=D)
    torch.sort(x.to(D), 0, out=(v, i))
    want = torch.sort(x, stable=True, dim=0)
    same(want.values, v)
    same(want.indices, i)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("k,dim,largest", [(3, 1, True), (2, 0, False), (7, 1, False), (1, -1, True)])
def test_topk(dtype, k, dim, largest):
    x = sample(dtype)
    loom.reset_metrics()
    want = torch.topk(x, k, dim, largest)
    got = torch.topk(x.to(D), k, dim, largest)
    same(want.values, got.values)  # tied indices may differ: check they pick the values
    same(want.values, torch.gather(x, dim if dim >= 0 else x.dim() + dim, got.indices.cpu()))
    assert loom.metrics()["fallbacks"] == {}


def test_sort_is_lazy_and_fuses_its_input():
    x = torch.arange(12.0, device=D).view(3, 4)
    loom.sync()
    loom.reset_metrics()
    v, i = torch.sort(x * -1, 1)
    assert loom.metrics()["extern_calls"] == 0
    assert v.tolist()[0] == [-3.0, -2.0, -1.0, -0.0]
    assert i.tolist()[0] == [3, 2, 1, 0]
    assert loom.metrics()["extern_calls"] == 1


def test_errors_match_cpu():
    x = sample(torch.float32)
    for fn in (lambda t: torch.topk(t, 9), lambda t: torch.sort(t, 2)):
        raises_like_cpu(lambda: fn(x), lambda: fn(x.to(D)), first_line=False)
