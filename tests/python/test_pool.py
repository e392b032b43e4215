"""2-d pooling forward and backward against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom
from gradients import cpu_and_loom_gradients

D = loom.device


def sample(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g)


def check(fn, x, tol=1e-5):
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        loom.reset_metrics()
        y = fn(xs)
        y = y[0] if isinstance(y, tuple) else y
        (y * sample(tuple(y.shape), 99).to(dev)).sum().backward()
        outs.append([y.detach().cpu(), xs.grad.cpu()])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*outs):
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


MAX = {
    "k2": lambda x: F.max_pool2d(x, 2),
    "k3s2p1": lambda x: F.max_pool2d(x, 3, 2, 1),
    "ceil": lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True),
    "dilation": lambda x: F.max_pool2d(x, 2, 1, 0, dilation=2),
    "rect": lambda x: F.max_pool2d(x, (2, 3), (1, 2)),
    "indices": lambda x: F.max_pool2d(x, 2, return_indices=True)[1].float() + F.max_pool2d(x, 2),
}
AVG = {
    "k2": lambda x: F.avg_pool2d(x, 2),
    "k3s2p1": lambda x: F.avg_pool2d(x, 3, 2, 1),
    "no_pad_count": lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    "ceil": lambda x: F.avg_pool2d(x, 3, 2, ceil_mode=True),
    "divisor": lambda x: F.avg_pool2d(x, 2, divisor_override=3),
    "adaptive_1": lambda x: F.adaptive_avg_pool2d(x, 1),
    "adaptive_3x2": lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    "adaptive_odd": lambda x: F.adaptive_avg_pool2d(x, (4, 5)),
}


@pytest.mark.parametrize("name", sorted(MAX))
def test_max_pool(name):
    check(MAX[name], sample((2, 3, 7, 8), 1))
    check(MAX[name], sample((3, 7, 8), 2))


@pytest.mark.parametrize("name", sorted(AVG))
def test_avg_pool(name):
    check(AVG[name], sample((2, 3, 7, 8), 3))
    check(AVG[name], sample((3, 7, 8), 4))


def test_pooled_value_read_by_two_kernels_is_stored_once(fresh_metrics):
    # NOTE [Live state]: a result of reductions that two kernels read is computed once and
    # stored; read by one kernel, it fuses into that kernel.
    x = torch.randn(2, 3, 8, 8)
    xl = x.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    y = F.max_pool2d(xl.relu(), 2)
    a, b = y * 2, y + 1
    del y
    torch.testing.assert_close(a.cpu(), F.max_pool2d(x.relu(), 2) * 2)
    torch.testing.assert_close(b.cpu(), F.max_pool2d(x.relu(), 2) + 1)
    assert loom.metrics()["kernels_run"] == 3  # the pool, then each reader of it
    loom.reset_metrics()
    c = F.max_pool2d(xl.relu(), 2) * 2
    torch.testing.assert_close(c.cpu(), F.max_pool2d(x.relu(), 2) * 2)
    assert loom.metrics()["kernels_run"] == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_max_pool_indices_with_nan_zeros_and_ties(dtype):
    g = torch.Generator().manual_seed(3)
    # Ties go to the first largest element, but a window's later NaN replaces an earlier
    # one (unlike argmax).
    pool = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, 1.0, -2.0])
    x = pool[torch.randint(0, len(pool), (2, 3, 12, 10), generator=g)].to(dtype)
    # Windows whose elements inside the input are all -inf next to the padding pick their
    # first element inside, never a padded one.
    x[0, 0] = -float("inf")
    for layout in (torch.contiguous_format, torch.channels_last):
        xs = x.contiguous(memory_format=layout)
        for args in [(2,), (3, 2), (3, 1, 1), (3, 2, 1), (2, 1, 1, 2), ((3, 2), (2, 1), (1, 0))]:
            v, i = F.max_pool2d(xs, *args, return_indices=True)
            vl, il = F.max_pool2d(xs.to(loom.device), *args, return_indices=True)
            torch.testing.assert_close(vl.cpu(), v, equal_nan=True)
            assert torch.equal(il.cpu(), i), args
            assert vl.stride() == v.stride() and il.stride() == i.stride()


def test_max_pool_gradient_keeps_the_input_memory_format():
    x = torch.randn(2, 3, 5, 8).to(memory_format=torch.channels_last)
    for kw in (dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2)):
        grads = []
        for dev in ("cpu", loom.device):
            t = x.detach().to(dev).requires_grad_()
            torch.nn.functional.max_pool2d(t, **kw).sum().backward()
            grads.append(t.grad)
        assert grads[1].stride() == grads[0].stride()
        torch.testing.assert_close(grads[1].cpu(), grads[0])


def test_max_pool_values_and_indices_are_one_kernel(fresh_metrics):
    """Values and indices come from one kernel (NOTE [Cohorts]), the indices stored in the
    values' layout, and with them the gradient of overlapping windows is one scatter split
    across threads."""
    for layout in (torch.contiguous_format, torch.channels_last):
        x = sample((4, 8, 11, 12), 5).contiguous(memory_format=layout)
        xl = x.to(D)
        loom.sync()
        loom.reset_metrics()
        v, i = F.max_pool2d(xl, 3, 2, 1, return_indices=True)
        want_v, want_i = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        assert torch.equal(v.cpu(), want_v)
        assert loom.metrics()["kernels_run"] == 1
        assert loom.metrics()["cohort_stores"] == 1
        assert torch.equal(i.cpu(), want_i)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=1, padding=1),
                                dict(kernel_size=3, stride=2, ceil_mode=True),
                                dict(kernel_size=(3, 2), stride=1, padding=(1, 0), dilation=(1, 2))])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "unbatched"])
def test_max_pool_gradient_over_overlapping_windows_scatters_in_parallel(kw, layout):
    """Where windows overlap, each window's gradient is added at its maximum's index by a
    scatter whose images write disjoint planes (none in order), channels innermost for a
    channels-last input, in the input's memory format."""
    check_parallel_gradient(lambda t: F.max_pool2d(t, **kw), layout, seed=9)


def check_parallel_gradient(pool, layout, seed):
    """The pool's gradient on Loom equals the CPU's, with its strides, and no scatter of it
    runs in order (metrics()["ordered_scatters"])."""
    x = sample((4, 5, 9, 10), seed)
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    x = x.to(memory_format=fmt)
    if layout == "unbatched":
        x = x[0]
    grads = cpu_and_loom_gradients(pool, x, seed + 1, fmt)
    assert loom.metrics()["ordered_scatters"] == 0
    assert grads[1].stride() == grads[0].stride()
    torch.testing.assert_close(grads[1].cpu(), grads[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, ceil_mode=True),
                                dict(kernel_size=(3, 2), stride=1, padding=(1, 0)),
                                dict(kernel_size=2, divisor_override=3)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "unbatched"])
def test_avg_pool_gradient_scatters_in_parallel(kw, layout):
    """The average pool's gradient adds each window's share at its elements' coordinates, in
    the input's memory format (as the CPU's), with a scatter whose images write disjoint
    planes: split across threads, none in order (metrics()["ordered_scatters"]). Channels-last
    scatters with the channels innermost."""
    check_parallel_gradient(lambda t: F.avg_pool2d(t, **kw), layout, seed=7)
