"""grid_sample (grid_sampler_2d/3d) forward and backward against CPU torch: every mode,
padding and align_corners, strided operands, coordinates far outside the input, and the CPU's
errors."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import outcome_like_cpu

D = loom.device


def sample(shape, seed, dtype=torch.float32, lo=-1.0, hi=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def check(x, grid, tol=None, **kw):
    """Output, input gradient and grid gradient of one grid_sample on CPU and Loom."""
    if tol is None:
        tol = 1e-4 if x.dtype == torch.float32 else 1e-10
    outs = []
    for dev in ("cpu", D):
        xs = x.detach().to(dev).requires_grad_()
        gs = grid.detach().to(dev).requires_grad_()
        loom.reset_metrics()
        y = F.grid_sample(xs, gs, **kw)
        (y * sample(tuple(y.shape), 99, y.dtype).to(dev)).sum().backward()
        outs.append([y.detach().cpu(), xs.grad.cpu(), gs.grad.cpu()])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for name, want, got in zip(("output", "input grad", "grid grad"), *outs):
        assert got.shape == want.shape and got.stride() == want.stride(), name
        torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=lambda m: f"{name}: {m}")


CASES = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"],
                               [False, True]))


@pytest.mark.parametrize("mode,padding,align", CASES)
def test_grid_sample_2d(mode, padding, align):
    for dtype in (torch.float32, torch.float64):
        x = sample((2, 3, 5, 7), 1, dtype)
        check(x, sample((2, 4, 6, 2), 2, dtype, -1.3, 1.3), mode=mode, padding_mode=padding,
              align_corners=align)
    # Coordinates several spans outside (reflection folds them back), and a size-1 dim.
    check(sample((1, 2, 4, 5), 3), sample((1, 8, 8, 2), 4, lo=-6, hi=6), mode=mode,
          padding_mode=padding, align_corners=align)
    check(sample((1, 2, 1, 5), 5), sample((1, 3, 3, 2), 6, lo=-2, hi=2), mode=mode,
          padding_mode=padding, align_corners=align)


@pytest.mark.parametrize("mode,padding,align", [c for c in CASES if c[0] != "bicubic"])
def test_grid_sample_3d(mode, padding, align):
    for dtype in (torch.float32, torch.float64):
        check(sample((2, 3, 4, 5, 6), 7, dtype), sample((2, 3, 4, 5, 3), 8, dtype, -1.3, 1.3),
              mode=mode, padding_mode=padding, align_corners=align)
    check(sample((1, 2, 3, 1, 4), 9), sample((1, 3, 3, 3, 3), 10, lo=-4, hi=4), mode=mode,
          padding_mode=padding, align_corners=align)


def test_grid_sample_strided_operands():
    x = sample((2, 6, 5, 8), 11)[:, ::2, :, ::2]
    grid = sample((2, 2, 4, 5), 12).permute(0, 2, 3, 1)[..., :2]
    for mode in ("bilinear", "nearest", "bicubic"):
        check(x, grid, mode=mode, align_corners=False)
    x = sample((2, 3, 5, 6), 13).to(memory_format=torch.channels_last)
    check(x, sample((2, 3, 3, 2), 14), mode="bilinear", align_corners=True)


def test_grid_sample_nearest_rounds_halves_as_the_cpu():
    # The 2-d kernel rounds halves to even, the 3-d one away from zero.
    x = sample((1, 1, 4, 4), 15)
    check(x, torch.tensor([[[[-0.75, -0.25], [0.25, 0.75], [-0.5, 0.5]]]]), mode="nearest",
          align_corners=False)
    x = sample((1, 1, 4, 4, 4), 16)
    check(x, torch.tensor([[[[[-0.75, -0.25, 0.25], [0.25, 0.75, -0.75]]]]]), mode="nearest",
          align_corners=False)


def test_grid_sample_non_finite_grid_stays_in_bounds():
    x = sample((1, 1, 4, 4), 17)
    grid = torch.tensor([[[[float("nan"), 0.0], [float("inf"), 0.5], [1e30, -1e30]]]])
    for mode, padding in itertools.product(["bilinear", "nearest", "bicubic"],
                                           ["zeros", "border", "reflection"]):
        out = F.grid_sample(x.to(D), grid.to(D), mode=mode, padding_mode=padding,
                            align_corners=False).cpu()
        assert out.shape == (1, 1, 1, 3)
    # Huge but finite coordinates read zeros (zeros padding) or the edge (border), as on CPU.
    for padding in ("zeros", "border"):
        check(x, torch.tensor([[[[1e30, -1e30], [-1e30, 0.0]]]]), mode="bilinear",
              padding_mode=padding, align_corners=False)


def test_grid_sample_kernel_counts():
    x = sample((2, 3, 6, 6), 18).to(D)
    grid = sample((2, 4, 4, 2), 19).to(D)
    loom.sync()
    loom.reset_metrics()
    F.grid_sample(x, grid, mode="bilinear", align_corners=False).cpu()
    assert loom.metrics()["kernels_run"] == 1


def test_grid_sampler_backward_output_mask():
    x = sample((1, 2, 4, 4), 20)
    grid = sample((1, 3, 3, 2), 21)
    g = sample((1, 2, 3, 3), 22)
    for mask in ([True, True], [False, True], [True, False]):
        want = torch.ops.aten.grid_sampler_2d_backward(g, x, grid, 0, 0, False, mask)
        got = torch.ops.aten.grid_sampler_2d_backward(g.to(D), x.to(D), grid.to(D), 0, 0, False,
                                                      mask)
        for w, o in zip(want, got):
            assert (w is None) == (o is None)
            if w is not None:
                torch.testing.assert_close(o.cpu(), w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda d: torch.grid_sampler_2d(torch.ones(1, 2, 3, 3, device=d),
                                    torch.ones(1, 2, 2, 2, device=d).double(), 0, 0, False),
    lambda d: torch.grid_sampler_2d(torch.ones(1, 2, 3, 3, device=d).half(),
                                    torch.ones(1, 2, 2, 2, device=d).half(), 0, 0, False),
    lambda d: torch.grid_sampler_3d(torch.ones(1, 2, 1, 3, 3, device=d).half(),
                                    torch.ones(1, 1, 2, 2, 3, device=d).half(), 0, 0, False),
    lambda d: torch.grid_sampler_3d(torch.ones(1, 2, 1, 3, 3, device=d),
                                    torch.ones(1, 1, 2, 2, 3, device=d), 2, 0, False),
    lambda d: torch.grid_sampler_2d(torch.ones(1, 2, 0, 3, device=d),
                                    torch.ones(1, 2, 2, 2, device=d), 0, 0, False),
    lambda d: torch.grid_sampler_2d(torch.ones(2, 2, 3, 3, device=d),
                                    torch.ones(1, 2, 2, 2, device=d), 0, 0, False),
    lambda d: torch.grid_sampler_2d(torch.ones(1, 2, 3, 3, device=d),
                                    torch.ones(1, 2, 2, 3, device=d), 0, 0, False),
    lambda d: torch.grid_sampler_2d(torch.ones(1, 2, 3, 3, device=d),
                                    torch.ones(1, 2, 2, 2, 2, device=d), 0, 0, False),
])
def test_grid_sample_errors_match_cpu(fn):
    # 1.13 has no float16 kernels, 2.x has: the same error or the same values
    outcome_like_cpu(lambda: fn("cpu"), lambda: fn(D))


def test_grid_sampler_2d_cpu_fallback_ops():
    # The CPU's scalar 2-d kernel is exposed as ops of its own; on Loom they are the same kernel
    # (its backward's composite would read data pointers, which Loom storages are not).
    x, grid, g = sample((1, 2, 4, 4), 23), sample((1, 3, 3, 2), 24), sample((1, 2, 3, 3), 25)
    fwd = torch.ops.aten._grid_sampler_2d_cpu_fallback
    bwd = torch.ops.aten._grid_sampler_2d_cpu_fallback_backward
    torch.testing.assert_close(fwd(x.to(D), grid.to(D), 0, 0, False).cpu(),
                               fwd(x, grid, 0, 0, False), rtol=1e-4, atol=1e-5)
    for want, got in zip(bwd(g, x, grid, 1, 2, True), bwd(g.to(D), x.to(D), grid.to(D), 1, 2, True)):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-5)
