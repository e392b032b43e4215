"""unique and unique_consecutive on Loom against CPU torch: values in the CPU's order
(sorted, or a hash set's order unsorted), inverse indices, counts, along a dim (strides
included), NaN, empty and 0-d inputs, and the CPU's errors. No fallbacks."""
import itertools

import pytest
import torch

import loom
from cpu_errors import raises_like_cpu

DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.float32,
          torch.float64, torch.bfloat16, torch.bool]
FLAGS = list(itertools.product([True, False], repeat=3))  # sorted, return_inverse, return_counts


def same(want, got):
    if isinstance(want, tuple):
        assert len(want) == len(got)
        for w, g in zip(want, got):
            same(w, g)
        return
    g = got.cpu()
    assert (g.dtype, g.shape, g.stride()) == (want.dtype, want.shape, want.stride())
    assert torch.equal(g.isnan() if g.is_floating_point() else g, want.isnan() if want.is_floating_point() else want)
    if g.is_floating_point():
        assert torch.equal(g.nan_to_num(7.5), want.nan_to_num(7.5))


@pytest.fixture
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def sample(dtype, shape=(5, 6), seed=0):
    x = torch.randint(0, 6, shape, generator=torch.Generator().manual_seed(seed))
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("flags", FLAGS)
def test_unique_whole(dtype, flags, no_fallbacks):
    s, inv, cnt = flags
    for x in (sample(dtype), sample(dtype, (4, 7), 1).t(), sample(dtype, (3,), 2)[0]):
        same(torch.unique(x, sorted=s, return_inverse=inv, return_counts=cnt),
             torch.unique(x.to(loom.device), sorted=s, return_inverse=inv, return_counts=cnt))
        same(torch.unique_consecutive(x, return_inverse=inv, return_counts=cnt),
             torch.unique_consecutive(x.to(loom.device), return_inverse=inv, return_counts=cnt))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("flags", FLAGS)
def test_unique_along_dim(dtype, dim, flags, no_fallbacks):
    s, inv, cnt = flags
    x = torch.randint(0, 2, (4, 3, 5), generator=torch.Generator().manual_seed(dim + 3)).to(dtype)
    x[2] = x[0]  # repeated slices along dim 0
    for t in (x, x.transpose(0, 2)):
        same(torch.unique(t, dim=dim, sorted=s, return_inverse=inv, return_counts=cnt),
             torch.unique(t.to(loom.device), dim=dim, sorted=s, return_inverse=inv, return_counts=cnt))
        same(torch.unique_consecutive(t, dim=dim, return_inverse=inv, return_counts=cnt),
             torch.unique_consecutive(t.to(loom.device), dim=dim, return_inverse=inv, return_counts=cnt))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8,
                                   torch.float32, torch.float64])
@pytest.mark.parametrize("distinct", [50, 100_000, 1 << 40])
def test_sorted_unique_of_many_values(dtype, distinct, no_fallbacks):
    """Sorted unique finds few distinct values by a table of their first occurrences and many
    (over 2^16) by a stable radix sort (NOTE [Sorted unique]): the CPU's values, inverse and
    counts either way, negative values and both zeros included (the first one met is the
    value kept, as in the CPU's set)."""
    g = torch.Generator().manual_seed(distinct % 1000)
    if dtype.is_floating_point:
        x = (torch.randint(-distinct, distinct, (200_000,), generator=g) * 0.37).to(dtype)
        x[torch.randint(0, 200_000, (500,), generator=g)] = -0.0
        x[torch.randint(0, 200_000, (500,), generator=g)] = 0.0
    else:
        info = torch.iinfo(dtype)
        x = torch.randint(max(info.min, -distinct), min(info.max, distinct), (200_000,),
                          generator=g).to(dtype)
    for zero_first in (False, True):
        if dtype.is_floating_point:
            x[0] = 0.0 if zero_first else -0.0
        for inv, cnt in ((False, False), (True, False), (False, True), (True, True)):
            want = torch.unique(x, sorted=True, return_inverse=inv, return_counts=cnt)
            got = torch.unique(x.to(loom.device), sorted=True, return_inverse=inv, return_counts=cnt)
            same(want, got)
            values = (want if isinstance(want, torch.Tensor) else want[0])
            got_values = (got if isinstance(got, torch.Tensor) else got[0]).cpu()
            assert torch.equal(torch.signbit(got_values), torch.signbit(values))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unique_nan_and_signed_zero(dtype, no_fallbacks):
    nan = float("nan")
    x = torch.tensor([1.0, nan, -0.0, 0.0, nan, 1.0, 3.0, nan], dtype=dtype)
    for s, inv, cnt in FLAGS:
        same(torch.unique(x, sorted=s, return_inverse=inv, return_counts=cnt),
             torch.unique(x.to(loom.device), sorted=s, return_inverse=inv, return_counts=cnt))
    same(torch.unique_consecutive(x, return_inverse=True, return_counts=True),
         torch.unique_consecutive(x.to(loom.device), return_inverse=True, return_counts=True))
    m = torch.tensor([[nan, 1.0], [nan, 1.0], [0.0, 2.0]], dtype=dtype)
    same(torch.unique(m, dim=0, return_inverse=True, return_counts=True),
         torch.unique(m.to(loom.device), dim=0, return_inverse=True, return_counts=True))


def test_unique_empty_and_scalar(no_fallbacks):
    for x in (torch.tensor([], dtype=torch.int64), torch.tensor(4.0), torch.zeros(0, 3)):
        for s, inv, cnt in FLAGS:
            same(torch.unique(x, sorted=s, return_inverse=inv, return_counts=cnt),
                 torch.unique(x.to(loom.device), sorted=s, return_inverse=inv, return_counts=cnt))
            same(torch.unique_consecutive(x, return_inverse=inv, return_counts=cnt),
                 torch.unique_consecutive(x.to(loom.device), return_inverse=inv, return_counts=cnt))
    x = torch.zeros(0, 3)
    same(torch.unique(x, dim=0, return_inverse=True, return_counts=True),
         torch.unique(x.to(loom.device), dim=0, return_inverse=True, return_counts=True))


def test_unique_of_pending_values(no_fallbacks):
    # The input is realized for its size; pending writes to it count.
    x = torch.arange(12, device=loom.device) % 4
    x[3] = 9
    want = torch.arange(12) % 4
    want[3] = 9
    same(torch.unique(want, return_counts=True), torch.unique(x, return_counts=True))


@pytest.mark.parametrize("bad", [
    lambda d: torch.unique(torch.ones(3, dtype=torch.float16, device=d)),
    lambda d: torch.unique(torch.ones(3, dtype=torch.complex64, device=d)),
    lambda d: torch.unique_consecutive(torch.ones(3, dtype=torch.float16, device=d)),
    lambda d: torch.unique(torch.ones(2, 2, dtype=torch.float16, device=d), dim=0),
    lambda d: torch.unique(torch.zeros(0, 0, device=d), dim=0),
    lambda d: torch.unique(torch.zeros(2, 0, device=d), dim=0),
    lambda d: torch.unique(torch.zeros(2, 3, device=d), dim=2),
])
def test_unique_errors(bad):
    """What the CPU refuses, Loom refuses alike; the dtypes a release's CPU takes (torch 2.x's
    unique takes float16), Loom takes too, with the CPU's results."""
    try:
        want = bad("cpu")
    except Exception:
        raises_like_cpu(lambda: bad("cpu"), lambda: bad(loom.device))
    else:
        same(want, bad(loom.device))
