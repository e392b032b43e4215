"""max_unpool1d/2d/3d on Loom against CPU torch: values, strides (channels-last kept),
unbatched inputs, out= into a strided tensor, gradients, repeated indices, and the CPU's
errors: bad arguments at the op, an index outside the plane at the op when known and at
realization when computed. No fallbacks."""
import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import raises_like_cpu

D = loom.device


@pytest.fixture
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def pooled(shape, nd, fmt=torch.contiguous_format, seed=0):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed))
    if fmt is not torch.contiguous_format:
        x = x.contiguous(memory_format=fmt)
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
    return pool(x, 2, return_indices=True)


def both(fn, *tensors):
    out = []
    for dev in ("cpu", D):
        args = [t.to(dev).requires_grad_() if t.is_floating_point() else t.to(dev) for t in tensors]
        y = fn(*args)
        g = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape).to(dev)
        grad, = torch.autograd.grad(y, args[0], g)
        out.append((y.detach().cpu(), grad.cpu(), y.stride()))
    return out


@pytest.mark.parametrize("nd,shape", [(1, (2, 3, 8)), (1, (3, 8)), (2, (2, 3, 6, 6)), (2, (3, 5, 4)),
                                      (3, (2, 2, 4, 4, 6)), (3, (2, 4, 4, 4))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unpool_matches_cpu(nd, shape, dtype, no_fallbacks):
    y, i = pooled(shape, nd)
    unpool = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[nd]
    (want, want_g, want_s), (got, got_g, got_s) = both(lambda a, b: unpool(a, b, 2), y.to(dtype), i)
    assert got_s == want_s and got.dtype == want.dtype
    assert torch.equal(got, want) and torch.equal(got_g, want_g)
    # An explicit, larger output size.
    size = [(s // 2) * 2 + 1 for s in shape[-nd:]]
    (want, _, _), (got, _, _) = both(lambda a, b: unpool(a, b, 2, output_size=size), y.to(dtype), i)
    assert torch.equal(got, want)


def test_unpool_channels_last_and_repeated_indices(no_fallbacks):
    y, i = pooled((2, 3, 6, 6), 2, torch.channels_last)
    (want, want_g, want_s), (got, got_g, got_s) = both(lambda a, b: F.max_unpool2d(a, b, 2), y, i)
    assert got_s == want_s and torch.equal(got, want) and torch.equal(got_g, want_g)
    # Every element of a plane to position 5: the last one written stays, as on the CPU.
    x = torch.arange(8.0).reshape(1, 2, 2, 2)
    idx = torch.full((1, 2, 2, 2), 5, dtype=torch.long)
    assert torch.equal(F.max_unpool2d(x.to(D), idx.to(D), 2).cpu(), F.max_unpool2d(x, idx, 2))


def test_unpool_out_into_strided(no_fallbacks):
    y, i = pooled((2, 3, 6, 6), 2)
    want = torch.ops.aten.max_unpool2d(y, i, [6, 6])
    out = torch.zeros(2, 3, 6, 12, device=D)[..., ::2]
    r = torch.ops.aten.max_unpool2d.out(y.to(D), i.to(D), [6, 6], out=out)
    assert r.data_ptr() == out.data_ptr() and torch.equal(out.cpu(), want)


def test_unpool_bad_index(no_fallbacks):
    x = torch.ones(1, 1, 2, 2)
    idx = torch.tensor([[[[0, 1], [2, 20]]]])
    with pytest.raises(RuntimeError) as want:
        F.max_unpool2d(x, idx, 2)
    # Known indices (copied from the host): at the op, as on the CPU.
    with pytest.raises(RuntimeError) as got:
        F.max_unpool2d(x.to(D), idx.to(D), 2)
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    # Indices computed from data: when the kernel runs.
    computed = (idx.to(D).float() * 1).long()
    u = F.max_unpool2d(x.to(D), computed, 2)
    with pytest.raises(RuntimeError, match="Found an invalid max index: 20"):
        u.cpu()
    with pytest.raises(RuntimeError) as want3:
        torch.ops.aten.max_unpool3d(torch.ones(1, 1, 1, 1, 2), torch.tensor([[[[[0, 9]]]]]), [1, 2, 2], [1, 1, 1], [0, 0, 0])
    with pytest.raises(RuntimeError) as got3:
        torch.ops.aten.max_unpool3d(torch.ones(1, 1, 1, 1, 2, device=D), torch.tensor([[[[[0, 9]]]]], device=D),
                                    [1, 2, 2], [1, 1, 1], [0, 0, 0])
    assert str(got3.value).splitlines()[0] == str(want3.value).splitlines()[0]


@pytest.mark.parametrize("bad", [
    lambda d: torch.ops.aten.max_unpool2d(torch.ones(1, 1, 2, 2, device=d), torch.zeros(1, 1, 2, 2, dtype=torch.int32, device=d), [4, 4]),
    lambda d: torch.ops.aten.max_unpool2d(torch.ones(1, 1, 2, 2, device=d), torch.zeros(1, 1, 2, 2, dtype=torch.long, device=d), [4]),
    lambda d: torch.ops.aten.max_unpool2d(torch.ones(2, 2, device=d), torch.zeros(2, 2, dtype=torch.long, device=d), [4, 4]),
    lambda d: torch.ops.aten.max_unpool2d(torch.ones(1, 1, 2, 2, device=d), torch.zeros(1, 1, 2, 3, dtype=torch.long, device=d), [4, 4]),
    lambda d: torch.ops.aten.max_unpool2d(torch.ones(1, 0, 2, 2, device=d), torch.zeros(1, 0, 2, 2, dtype=torch.long, device=d), [4, 4]),
    lambda d: torch.ops.aten.max_unpool3d(torch.ones(1, 1, 1, 2, 2, device=d), torch.zeros(1, 1, 1, 2, 2, dtype=torch.long, device=d), [1, 4, 4], [0, 2, 2], [0, 0, 0]),
    lambda d: torch.ops.aten.max_unpool3d(torch.ones(1, 1, 1, 2, 2, device=d), torch.zeros(1, 1, 1, 2, 2, dtype=torch.long, device=d), [4, 4], [1, 2, 2], [0, 0, 0]),
    lambda d: torch.ops.aten.max_unpool3d(torch.ones(2, 2, device=d), torch.zeros(2, 2, dtype=torch.long, device=d), [1, 4, 4], [1, 2, 2], [0, 0, 0]),
])
def test_unpool_argument_errors(bad):
    raises_like_cpu(lambda: bad("cpu"), lambda: bad(D))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_unpool_alerts_when_deterministic(dims):
    # Duplicate indices make max unpooling nondeterministic; the CPU alerts under
    # torch.use_deterministic_algorithms.
    module = [torch.nn.MaxUnpool1d, torch.nn.MaxUnpool2d, torch.nn.MaxUnpool3d][dims - 1](3, 1)
    x = torch.randn((1, 1) + (5,) * dims)
    indices = torch.zeros_like(x, dtype=torch.long)
    torch.use_deterministic_algorithms(True)
    try:
        raises_like_cpu(lambda: module(x, indices),
                        lambda: module(x.to(loom.device), indices.to(loom.device)))
    finally:
        torch.use_deterministic_algorithms(False)
