"""Fractional max pooling (2-d and 3-d) forward, backward and out= against CPU torch, given the
same random samples; and the CPU's errors."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import outcome_like_cpu

D = loom.device
OPS = {2: torch.ops.aten.fractional_max_pool2d, 3: torch.ops.aten.fractional_max_pool3d}


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def uniform(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=torch.float64).to(dtype)


def check(k, x, kernel, out_size, u):
    res = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        loom.reset_metrics()
        out, idx = OPS[k](xs, kernel, out_size, u.to(dev))
        (out * sample(tuple(out.shape), 5, out.dtype).to(dev)).sum().backward()
        res.append([out.detach().cpu(), idx.cpu(), xs.grad.cpu()])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*res):
        assert got.shape == want.shape and got.stride() == want.stride()
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("k,dtype,batch", itertools.product([2, 3], [torch.float32, torch.float64],
                                                          [True, False]))
def test_fractional_max_pool(k, dtype, batch):
    shape = (2, 3, 9, 11) if k == 2 else (2, 3, 8, 9, 10)
    x = sample(shape, 1, dtype)
    x[..., 2, 3] = float("nan")  # a NaN is the maximum of its windows, as on CPU
    x[0, 0, ..., 5] = float("-inf")
    if not batch:
        x = x[0]
    u = uniform((2 if batch else 1, 3, k), 2, dtype)
    for kernel, out_size in [(2, 4), (3, 5), (2, 1), (1, 3)]:
        check(k, x, [kernel] * k, [out_size] * k, u)
    # Different sizes per dim (the 2-d kernel reads sample 0 for the width, the 3-d one in
    # dim order).
    check(k, x, [2, 3, 2][:k], [5, 3, 4][:k], u)


def test_fractional_max_pool_strided_input():
    x = sample((2, 6, 10, 12), 3)[:, ::2, :, ::2]
    check(2, x, [2, 2], [4, 3], uniform((2, 3, 2), 4))
    x = sample((1, 2, 8, 8), 5).to(memory_format=torch.channels_last)
    check(2, x, [3, 2], [3, 4], uniform((1, 2, 2), 6))


def test_fractional_max_pool_functional_indices_point_at_the_maximum():
    # F.fractional_max_pool2d draws its samples on the device (Loom's generator), so compare
    # the result with the values its indices name.
    x = sample((2, 3, 10, 10), 7).to(D)
    out, idx = F.fractional_max_pool2d(x, 3, output_size=5, return_indices=True)
    flat = x.cpu().flatten(2).gather(2, idx.cpu().flatten(2)).view_as(out)
    assert torch.equal(out.cpu(), flat)
    assert F.fractional_max_pool3d(sample((1, 2, 8, 8, 8), 8).to(D), 2,
                                   output_ratio=0.5).shape == (1, 2, 4, 4, 4)


def test_fractional_max_pool_out():
    x, u = sample((1, 2, 8, 8), 9), uniform((1, 2, 2), 10)
    want = torch.ops.aten.fractional_max_pool2d(x, [2, 2], [4, 4], u)
    out = torch.empty(0, device=D)
    idx = torch.empty(0, dtype=torch.long, device=D)
    loom.reset_metrics()
    torch.ops.aten.fractional_max_pool2d.output(x.to(D), [2, 2], [4, 4], u.to(D), output=out,
                                               indices=idx)
    assert loom.metrics()["fallbacks"] == {}
    assert torch.equal(out.cpu(), want[0]) and torch.equal(idx.cpu(), want[1])


def test_fractional_max_pool_kernel_count():
    # The kernel that stores the values stores the indices beside them (NOTE [Cohorts]);
    # the indices' own storage is a copy when they are realized.
    x = sample((2, 3, 9, 9), 11).to(D)
    u = uniform((2, 3, 2), 12).to(D)
    loom.sync()
    out, idx = OPS[2](x, [2, 2], [4, 4], u)
    loom.reset_metrics()
    out.cpu()
    assert (loom.metrics()["kernels_run"], loom.metrics()["cohort_stores"]) == (1, 1)
    loom.reset_metrics()
    idx.cpu()
    assert (loom.metrics()["kernels_run"], loom.metrics()["cohort_stores"]) == (1, 0)


def _r(*s, dtype=torch.float32):
    """The same random operand on either device."""
    return lambda d: torch.rand(*s, generator=torch.Generator().manual_seed(len(s)),
                                dtype=dtype).to(d)


@pytest.mark.parametrize("fn", [
    lambda d: OPS[2](_r(1, 2, 4, 4)(d), [3, 3], [3, 3], _r(1, 2, 2)(d)),
    lambda d: OPS[2](_r(1, 2, 4, 4, dtype=torch.half)(d), [2, 2], [3, 3],
                     _r(1, 2, 2, dtype=torch.half)(d)),
    lambda d: OPS[3](_r(1, 2, 4, 4, 4)(d), [2, 2, 2], [3, 3, 4], _r(1, 2, 3)(d)),
    lambda d: OPS[2](_r(1, 2, 4, 4)(d), [2, 2], [3, 3], _r(1, 2, 2, dtype=torch.double)(d)),
    lambda d: OPS[2](_r(2, 4, 4)(d), [2], [3, 3], _r(1, 2, 2)(d)),
    lambda d: OPS[2](_r(2, 0, 4)(d), [2, 2], [3, 3], _r(1, 2, 2)(d)),
    lambda d: torch.ops.aten.fractional_max_pool2d_backward(
        _r(1, 2, 3, 2)(d), _r(1, 2, 4, 4)(d), [2, 2], [3, 3],
        torch.zeros(1, 2, 3, 2, dtype=torch.long, device=d)),
    lambda d: torch.ops.aten.fractional_max_pool3d_backward(
        _r(1, 2, 2, 3, 3)(d), _r(1, 2, 5, 5, 5)(d), [2, 2, 2], [3, 3, 3],
        torch.zeros(1, 2, 2, 3, 3, dtype=torch.long, device=d)),
])
def test_fractional_max_pool_errors_match_cpu(fn):
    # 1.13 has no float16 kernels, 2.x has: the same error or the same values
    outcome_like_cpu(lambda: fn("cpu"), lambda: fn(D))
