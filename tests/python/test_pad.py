"""Constant, reflection, replication and circular padding forward and backward against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import raises_like_cpu
from gradients import cpu_and_loom_gradients

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
        loss = (y * sample(tuple(y.shape), 99, y.dtype).to(dev)).sum()
        (loss.real if loss.is_complex() else loss).backward()  # 2.x wants a real loss
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
    # 1.13's kernels refuse these; 2.x's take them (and refuse bool).
    from cpu_errors import outcome_like_cpu
    x = torch.arange(24).view(2, 3, 4)
    for mode in ("reflect", "replicate"):
        for dtype in (torch.long, torch.uint8, torch.bfloat16, torch.float16, torch.bool):
            for pad in ((2, 1), (2, 1, 1, 0), (1, 0, 1, 1, 0, 1)):
                t = x.to(dtype)[None] if len(pad) == 6 else x.to(dtype)
                outcome_like_cpu(lambda: F.pad(t, pad, mode=mode),
                                 lambda: F.pad(t.to(D), pad, mode=mode))


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
    grads = cpu_and_loom_gradients(lambda t: F.pad(t, (3, 2, 1, 4), mode=mode), x, 22)
    assert loom.metrics()["ordered_scatters"] == 0
    torch.testing.assert_close(grads[1].cpu(), grads[0], rtol=1e-5, atol=1e-6)


CONSTANT_PADS = [(1, 1), (2, 0, 0, 3), (1, 2, 3, 4), (-1, 2, 0, -2), (0, 0, 0, 0), (-1, -1),
                 (1, 1, 1, 1, 1, 1), (0, 0, 0, 0, 0, 0, 2, 1)]


@pytest.mark.parametrize("pad", CONSTANT_PADS, ids=str)
def test_constant_pad(pad):
    """constant_pad_nd is one gather of the input at each coordinate less the padding,
    the fill outside (NOTE [Constant padding]): values, strides (a channels-last input
    stays channels-last), the gradient, and crops (negative padding)."""
    x = sample((2, 3, 5, 6), 31)
    check(lambda t: F.pad(t, pad, value=0.5), x)
    check(lambda t: F.pad(t, pad), x.to(memory_format=torch.channels_last))
    check(lambda t: F.pad(t, pad, value=-2.0), x[:, :, 1:, ::2])


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.bool, torch.float16,
                                   torch.bfloat16, torch.float64, torch.complex64])
def test_constant_pad_dtypes(dtype):
    x = (sample((3, 4, 5), 32) * 4).to(dtype)
    value = True if dtype == torch.bool else 3
    want = F.pad(x, (1, 2, 0, 1), value=value)
    got = F.pad(x.to(D), (1, 2, 0, 1), value=value).cpu()
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_constant_pad_kernels_and_empty_inputs():
    """A padding read by a pooling is fused into it, and a padding alone is one kernel;
    padding an empty dim gives the fill."""
    x = sample((4, 8, 16, 16), 33)
    xl = x.to(D)
    loom.sync()
    loom.reset_metrics()
    got = F.avg_pool2d(xl, 3, 2, 1).cpu()
    assert loom.metrics()["kernels_run"] == 1
    torch.testing.assert_close(got, F.avg_pool2d(x, 3, 2, 1))
    loom.reset_metrics()
    got = F.pad(xl, (1, 2, 3, 4), value=2.5).cpu()
    assert loom.metrics()["kernels_run"] == 1
    assert torch.equal(got, F.pad(x, (1, 2, 3, 4), value=2.5))
    for shape, pad in [((3, 0), (1, 1)), ((0, 4), (1, 1)), ((2, 0, 3), (0, 0, 2, 0))]:
        e = torch.empty(shape)
        want = F.pad(e, pad, value=7.0)
        got = F.pad(e.to(D), pad, value=7.0).cpu()
        assert got.shape == want.shape and torch.equal(got, want)


@pytest.mark.parametrize("case", ["odd", "long", "negative"])
def test_constant_pad_errors(case):
    pads = {"odd": (1, 2, 3), "long": (1,) * 8, "negative": (-3, -3)}
    raises_like_cpu(lambda: F.pad(torch.zeros(2, 5), pads[case]),
                    lambda: F.pad(torch.zeros(2, 5, device=D), pads[case]).cpu())


def test_unfold_is_one_window_copy():
    """im2col copies one (N, C, KH, KW, OH, OW) view of the padded input, the padding fused
    in: two kernels (that copy and the store into the result), where one per kernel offset
    ran before."""
    x = sample((4, 8, 16, 16), 34)
    xl = x.to(D)
    loom.sync()
    for kw in (dict(kernel_size=3, padding=1), dict(kernel_size=(2, 3), stride=2, dilation=(1, 2), padding=(0, 2))):
        loom.reset_metrics()
        got = F.unfold(xl, **kw).cpu()
        assert loom.metrics()["kernels_run"] <= 2
        assert torch.equal(got, F.unfold(x, **kw))
