"""Pooling beyond 2-d max/avg: 1-d and 3-d max and average pooling, adaptive max (1-d to
3-d) and adaptive average (1-d, 3-d), forward and backward against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def check(fn, x, tol=1e-4):
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        loom.reset_metrics()
        y = fn(xs)
        ys = y if isinstance(y, tuple) else (y,)
        (ys[0] * sample(tuple(ys[0].shape), 99, ys[0].dtype).to(dev)).sum().backward()
        outs.append([t.detach().cpu() for t in ys] + [xs.grad.cpu()])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*outs):
        assert got.shape == want.shape and got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


POOL3D = {
    "max_k2": lambda x: F.max_pool3d(x, 2, return_indices=True),
    "max_k3s2p1": lambda x: F.max_pool3d(x, 3, 2, 1, return_indices=True),
    "max_ceil_dil": lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 0, 1), dilation=(2, 1, 1), ceil_mode=True),
    "avg_k2": lambda x: F.avg_pool3d(x, 2),
    "avg_k3s2p1": lambda x: F.avg_pool3d(x, 3, 2, 1),
    "avg_no_pad_count_ceil": lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    "avg_divisor": lambda x: F.avg_pool3d(x, (1, 2, 3), divisor_override=4),
    "adaptive_avg": lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)),
    "adaptive_avg_1": lambda x: F.adaptive_avg_pool3d(x, 1),
    "adaptive_max": lambda x: F.adaptive_max_pool3d(x, (3, 2, 5), return_indices=True),
}


@pytest.mark.parametrize("name", sorted(POOL3D))
def test_pool3d(name):
    check(POOL3D[name], sample((2, 3, 5, 6, 7), 1))
    check(POOL3D[name], sample((2, 5, 6, 7), 2))  # unbatched


POOL1D = {
    "max": lambda x: F.max_pool1d(x, 3, 2, 1),
    "max_indices": lambda x: F.max_pool1d(x, 2, return_indices=True),
    "avg": lambda x: F.avg_pool1d(x, 3, 2, 1),
    "adaptive_max": lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True),
    "adaptive_avg": lambda x: F.adaptive_avg_pool1d(x, 4),
}


@pytest.mark.parametrize("name", sorted(POOL1D))
def test_pool1d(name):
    check(POOL1D[name], sample((2, 3, 11), 3))


@pytest.mark.parametrize("out", [(3, 3), (1, 1), (4, 7), (7, 8)])
def test_adaptive_max_pool2d(out):
    check(lambda x: F.adaptive_max_pool2d(x, out, return_indices=True), sample((2, 3, 7, 8), 4))
    check(lambda x: F.adaptive_max_pool2d(x, out), sample((3, 7, 8), 5))


def test_pool_strided_and_dtypes():
    x = sample((2, 6, 5, 4, 3), 6)
    check(lambda x: F.max_pool3d(x.transpose(2, 4), 2), x)
    check(lambda x: F.avg_pool3d(x[:, ::2], 2, 1), x)
    check(lambda x: F.adaptive_max_pool2d(x[0].transpose(1, 2), (2, 3)), x)
    check(lambda x: F.adaptive_max_pool2d(x[:, :, 0].contiguous(memory_format=torch.channels_last), 3), x)
    x64 = sample((1, 2, 4, 5, 6), 7, torch.float64)
    for fn in (lambda x: F.max_pool3d(x, 2), lambda x: F.avg_pool3d(x, 3, 1, 1), lambda x: F.adaptive_avg_pool3d(x, 3)):
        check(fn, x64, 1e-10)


def test_max_pool3d_ties_and_inf():
    x = torch.zeros(1, 1, 4, 4, 4)
    x[0, 0, 1, 1, 1] = float("inf")
    check(lambda x: F.max_pool3d(x, 2, return_indices=True), x)


def test_max_pool3d_indices_with_nans():
    # A window's later NaN replaces an earlier one, as in the CPU's pooling kernels.
    g = torch.Generator().manual_seed(5)
    pool = torch.tensor([float("nan"), 1.0, 1.0, -0.0, 0.0, -float("inf")])
    x = pool[torch.randint(0, len(pool), (1, 2, 5, 6, 6), generator=g)]
    v, i = F.max_pool3d(x, 2, 1, return_indices=True)
    vl, il = F.max_pool3d(x.to(loom.device), 2, 1, return_indices=True)
    torch.testing.assert_close(vl.cpu(), v, equal_nan=True)
    assert torch.equal(il.cpu(), i)


def test_pool3d_errors():
    x = sample((2, 3, 4, 4, 4), 8)
    for fn in (lambda x: F.max_pool3d(x, 5), lambda x: F.avg_pool3d(x, 5), lambda x: F.max_pool3d(x, 2, padding=2),
               lambda x: F.adaptive_avg_pool3d(x[0, 0, 0], 2), lambda x: F.adaptive_max_pool2d(x[0, 0, 0, 0], 2)):
        try:
            fn(x)
        except Exception as e:  # noqa: BLE001
            want = e
        else:
            raise AssertionError("CPU did not raise")
        with pytest.raises(type(want)):
            fn(x.to(D))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_adaptive_max_pool2d_even_windows(dtype):
    """Windows that divide the input evenly run as max_pool2d's strided windows: the CPU's
    values, indices (ties: the first; NaN: the last) and layout, channels-last included."""
    x = sample((2, 3, 12, 8), 7).round().to(dtype)  # rounded: ties in most windows
    x[0, 1, 2, 3] = float("nan")
    x[1, 2, 5, 0] = x[1, 2, 4, 1] = float("nan")
    for t in (x, x.contiguous(memory_format=torch.channels_last)):
        for out in [(4, 2), (3, 4), (1, 1), (12, 8)]:
            v, i = F.adaptive_max_pool2d(t, out, return_indices=True)
            lv, li = F.adaptive_max_pool2d(t.to(D), out, return_indices=True)
            assert torch.equal(li.cpu(), i)
            torch.testing.assert_close(lv.cpu(), v, equal_nan=True)
            assert lv.stride() == v.stride()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_max_pool_indices_with_nan_infinities_and_ties(dtype):
    """3-d, adaptive and fractional max pooling pick the CPU's element: the first largest,
    or the last NaN; a window inside the input only at -inf elements never picks padding."""
    g = torch.Generator().manual_seed(3)
    pool = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, 1.0, -2.0])
    x = pool[torch.randint(0, len(pool), (2, 3, 7, 8, 9), generator=g)].to(dtype)
    x[0, 0] = -float("inf")
    x2 = x[:, :, 0]
    s2, s3 = torch.rand(2, 3, 2, dtype=dtype, generator=g), torch.rand(2, 3, 3, dtype=dtype, generator=g)
    cases = [(F.max_pool3d, x, a) for a in [(2,), (3, 2, 1), (3, 1, 1), (2, 1, 0, 2)]]
    cases += [(F.adaptive_max_pool2d, x2, (o,)) for o in [(3, 3), (4, 5), (7, 8)]]
    cases += [(F.adaptive_max_pool3d, x, ((3, 4, 2),))]
    for fn, t, args in cases:
        v, i = fn(t, *args, return_indices=True)
        vl, il = fn(t.to(loom.device), *args, return_indices=True)
        torch.testing.assert_close(vl.cpu(), v, equal_nan=True)
        assert torch.equal(il.cpu(), i), (fn.__name__, args)
    for fn, t, size, s in [(F.fractional_max_pool2d, x2, (4, 5), s2),
                           (F.fractional_max_pool3d, x, (3, 4, 4), s3)]:
        v, i = fn(t, 2, output_size=size, return_indices=True, _random_samples=s)
        vl, il = fn(t.to(loom.device), 2, output_size=size, return_indices=True,
                    _random_samples=s.to(loom.device))
        torch.testing.assert_close(vl.cpu(), v, equal_nan=True)
        assert torch.equal(il.cpu(), i), fn.__name__
