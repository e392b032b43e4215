"""Reflection, replication and circular padding forward and backward against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def check(fn, x, tol=1e-4):
    """fn's value and the gradient of a weighted sum of it agree with CPU, with no fallback."""
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        loom.reset_metrics()
        y = fn(xs)
        (y * sample(tuple(y.shape), 99, y.dtype).to(dev)).sum().backward()
        outs.append([y.detach().cpu(), xs.grad.cpu()])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*outs):
        assert got.shape == want.shape and got.stride() == want.stride()
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


PADS = {
    1: [(2, 1), (0, 3), (1, 1), (-1, 2)],
    2: [(2, 1, 1, 2), (0, 0, 3, 1), (1, -1, 0, 2)],
    3: [(1, 1, 1, 1, 1, 1), (2, 0, 0, 1, 1, 2)],
}
SHAPES = {1: [(2, 3, 5), (3, 4)], 2: [(2, 3, 5, 6), (3, 4, 5)], 3: [(2, 2, 4, 5, 6), (2, 3, 4, 5)]}


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_pad_modes(mode, k):
    for shape in SHAPES[k]:
        for pad in PADS[k]:
            if mode == "circular" and (len(shape) != k + 2 or min(pad) < 0):
                continue  # 1.13's circular pad wants a batch dim and non-negative pads
            check(lambda x: F.pad(x, pad, mode=mode), sample(shape, sum(shape)))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_strided_inputs(mode):
    x = sample((3, 6, 7, 2), 5)
    check(lambda x: F.pad(x.transpose(1, 3), (2, 1, 1, 2), mode=mode), x)
    check(lambda x: F.pad(x[:, ::2, 1:, 0], (1, 2), mode=mode), x)
    check(lambda x: F.pad(x.permute(3, 0, 2, 1), (2, 2, 3, 1), mode=mode), x)


def test_pad_replicate_large_and_size_one():
    # Replication may pad by more than the input's size; a size-1 dim replicates one element.
    check(lambda x: F.pad(x, (7, 4), mode="replicate"), sample((2, 3, 2), 6))
    check(lambda x: F.pad(x, (3, 2, 1, 4), mode="replicate"), sample((1, 1, 1, 1), 7))
    check(lambda x: F.pad(x, (1, 0, 0, 1), mode="reflect"), sample((1, 2, 2, 2), 8))


def test_pad_dtypes():
    for mode in ("reflect", "replicate"):
        check(lambda x: F.pad(x, (2, 1, 1, 2), mode=mode), sample((2, 3, 5, 6), 9, torch.float64), 1e-7)
        check(lambda x: F.pad(x, (2, 1), mode=mode), sample((2, 3, 5), 10, torch.complex64))
    # Of the CPU's padding kernels only reflection_pad3d has Half and BFloat16.
    for dtype in (torch.bfloat16, torch.float16):
        check(lambda x: F.pad(x, (1, 1, 2, 0, 0, 1), mode="reflect"), sample((1, 2, 3, 4, 5), 11, dtype), 1e-2)


def test_pad_unsupported_dtypes():
    x = torch.arange(24).view(2, 3, 4)
    for mode in ("reflect", "replicate"):
        for dtype in (torch.long, torch.uint8, torch.bfloat16):
            want, got = raises_like(lambda x: F.pad(x, (2, 1), mode=mode), x.to(dtype))
            assert str(got) == str(want)


def test_pad_kernel_count():
    x = sample((2, 3, 8, 8), 10).to(D)
    loom.sync()
    loom.reset_metrics()
    y = F.pad(x, (1, 1, 1, 1), mode="reflect") * 2 + 1  # the gather fuses with its consumers
    y.cpu()
    assert loom.metrics()["kernels_run"] == 1


def raises_like(fn, x):
    try:
        fn(x)
    except Exception as e:  # noqa: BLE001
        want = e
    else:
        raise AssertionError("CPU did not raise")
    with pytest.raises(type(want)) as got:
        fn(x.to(D))
    return want, got.value


@pytest.mark.parametrize("k", [1, 2, 3])
def test_pad_errors(k):
    shape = SHAPES[k][0]
    too_big = [0] * (2 * k)
    too_big[0] = shape[-1]
    want, got = raises_like(lambda x: F.pad(x, tuple(too_big), mode="reflect"), sample(shape, 1))
    assert str(got) == str(want)
    # wrong number of dims
    raises_like(lambda x: F.pad(x, (1,) * (2 * k), mode="reflect"), sample((4,) * (k + 3), 1))
    raises_like(lambda x: F.pad(x, (1,) * (2 * k), mode="replicate"), sample((4,) * (k + 3), 1))


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_padding_gradient_scatters_in_parallel(mode):
    """Reflection's and replication's gradients scatter at coordinates that stay within each
    image's plane (|.| and clamps bound them): split across threads, none in order (NOTE
    [Parallel scatters])."""
    x = torch.randn(3, 4, 9, 7, generator=torch.Generator().manual_seed(21))
    grads = []
    for dev in ("cpu", loom.device):
        t = x.to(dev).requires_grad_()
        y = torch.nn.functional.pad(t, (3, 2, 1, 4), mode=mode)
        w = torch.randn(y.shape, generator=torch.Generator().manual_seed(22)).to(dev)
        loom.sync()
        loom.reset_metrics()
        grads.append(torch.autograd.grad(y, t, w)[0].cpu())
    assert loom.metrics()["ordered_scatters"] == 0
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6)
