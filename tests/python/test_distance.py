"""torch.cdist on Loom: the direct kernel (_cdist_forward and _cdist_backward, every norm)
and the matrix-product form for p = 2, values and gradients against CPU torch, batch
broadcasting, empty inputs, and the CPU's errors."""
import math

import pytest
import torch

import loom
from cpu_errors import raises_like_cpu

D = loom.device
MODES = [None, "donot_use_mm_for_euclid_dist", "use_mm_for_euclid_dist"]
SHAPES = [((5, 4), (3, 4)), ((2, 5, 4), (3, 4)), ((2, 1, 5, 4), (3, 6, 4)), ((30, 3), (28, 3))]


def both(s1, s2, p, mode, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x1 = torch.randn(s1, generator=g, dtype=dtype)
    x2 = torch.randn(s2, generator=g, dtype=dtype)
    direct = not (p == 2 and (mode == "use_mm_for_euclid_dist" or
                              (mode is None and max(s1[-2], s2[-2]) > 25)))
    if direct:  # a zero distance and a zero difference (the product form is ill-posed there)
        x2[..., 0, :] = x1.reshape(-1, s1[-1])[0]
    kw = {} if mode is None else {"compute_mode": mode}
    out = []
    for dev in ("cpu", D):
        a, b = x1.to(dev).requires_grad_(), x2.to(dev).requires_grad_()
        y = torch.cdist(a, b, p=p, **kw)
        go = torch.randn(y.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=dtype)
        grads = torch.autograd.grad(y, (a, b), go.to(dev)) if y.numel() else ()
        out.append([y.detach().cpu()] + [t.cpu() for t in grads])
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cdist(shapes, p, mode, dtype):
    loom.reset_metrics()
    want, got = both(*shapes, p, mode, dtype, seed=len(shapes[0]) * 10 + int(p * 2 if p < 9 else 9))
    tol = 2e-4 if dtype == torch.float32 else 1e-10
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)
    assert loom.metrics()["fallbacks"] == {}


def test_cdist_empty():
    for s1, s2 in (((0, 4), (3, 4)), ((5, 0), (3, 0)), ((1, 5, 4), (0, 3, 4))):
        x1, x2 = torch.randn(s1), torch.randn(s2)
        want = torch.cdist(x1, x2, p=1.5)
        got = torch.cdist(x1.to(D), x2.to(D), p=1.5).cpu()
        assert got.shape == want.shape
        torch.testing.assert_close(got, want)


BAD = {
    "p_negative": lambda d: torch.cdist(torch.ones(3, 4, device=d), torch.ones(2, 4, device=d), p=-1),
    "columns": lambda d: torch.cdist(torch.ones(3, 4, device=d), torch.ones(2, 5, device=d), p=1.5),
    "one_dim": lambda d: torch.cdist(torch.ones(4, device=d), torch.ones(2, 4, device=d), p=1.5),
    "integers": lambda d: torch.cdist(torch.ones(3, 4, dtype=torch.long, device=d),
                                      torch.ones(2, 4, dtype=torch.long, device=d), p=1.5),
    "half": lambda d: torch.cdist(torch.ones(3, 4, device=d).half(), torch.ones(2, 4, device=d).half(), p=1.5),
    "dtypes": lambda d: torch.cdist(torch.ones(3, 4, device=d), torch.ones(2, 4, device=d).double(), p=1.5),
    "mode": lambda d: torch.ops.aten._cdist_forward(torch.ones(3, 4, device=d), torch.ones(2, 4, device=d), 2.0, 5),
}


@pytest.mark.parametrize("name", list(BAD))
def test_cdist_errors_match_cpu(name):
    raises_like_cpu(lambda: BAD[name]("cpu"), lambda: BAD[name](D))


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("shape", [(6, 4), (1, 3), (0, 2), (4, 0), (9, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pdist(shape, p, dtype):
    # Distances of the row pairs i < j and their gradient (rows 0 and 2 equal: a zero
    # distance), against the CPU's.
    loom.reset_metrics()
    g = torch.Generator().manual_seed(shape[0] * 7 + int(min(p, 9) * 2))
    x = torch.randn(shape, generator=g, dtype=dtype)
    if shape[0] > 2:
        x[2] = x[0]
    out = []
    for dev in ("cpu", D):
        a = x.to(dev).requires_grad_()
        y = torch.nn.functional.pdist(a, p)
        go = torch.randn(y.shape, generator=torch.Generator().manual_seed(3), dtype=dtype)
        grads = torch.autograd.grad(y, a, go.to(dev)) if y.numel() else ()
        out.append([y.detach().cpu()] + [t.cpu() for t in grads])
    tol = 2e-4 if dtype == torch.float32 else 1e-10
    for b, a in zip(*out):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)
    assert loom.metrics()["fallbacks"] == {}


PDIST_BAD = {
    "one_dim": lambda d: torch.nn.functional.pdist(torch.ones(4, device=d)),
    "integers": lambda d: torch.nn.functional.pdist(torch.ones(3, 4, dtype=torch.long, device=d)),
    "half": lambda d: torch.nn.functional.pdist(torch.ones(3, 4, dtype=torch.half, device=d)),
    "p_negative": lambda d: torch.nn.functional.pdist(torch.ones(3, 4, device=d), -1),
    "strided": lambda d: torch.ops.aten._pdist_forward(torch.ones(4, 3, device=d).t(), 2.0),
    "backward_strided": lambda d: torch.ops.aten._pdist_backward(
        torch.ones(3, device=d), torch.ones(4, 3, device=d).t(), 2.0, torch.ones(3, device=d)),
}


@pytest.mark.parametrize("name", list(PDIST_BAD))
def test_pdist_errors_match_cpu(name):
    raises_like_cpu(lambda: PDIST_BAD[name]("cpu"), lambda: PDIST_BAD[name](D))


@pytest.mark.parametrize("n,m", [(2, 3), (3, 1), (5, 4), (64, 7), (100, 33), (1000, 2), (3001, 1)])
def test_pdist_pairs_follow_the_cpu(n, m):
    """pdist gathers each pair's rows at the (i, j) its number gives (NOTE [Pair rows]): every
    pair, in the CPU's order, exact for float64 and each norm."""
    x = torch.randn(n, m, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    for p in [0, 1, 2, 3.5, math.inf]:
        want = torch.nn.functional.pdist(x, p)
        got = torch.nn.functional.pdist(x.to(loom.device), p).cpu()
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_pdist_is_one_kernel_with_its_pair_math_outside_the_loop(tmp_path):
    """One kernel; the pair's row numbers (a square root) are computed once per pair, before
    the loop over the columns (NOTE [Invariant terms]), which runs as vector lanes."""
    from kernel_text import kernel_sources
    prog = ("import torch, loom\n"
            "x = torch.randn(100, 32)\n"
            "loom.reset_metrics()\n"
            "got = torch.nn.functional.pdist(x.to(loom.device)).cpu()\n"
            "torch.testing.assert_close(got, torch.nn.functional.pdist(x))\n")
    kernels = [k for k in kernel_sources(prog, tmp_path) if "sqrt(" in k and "LOOM_LANES" in k]
    assert len(kernels) == 1, kernels
    body = kernels[0]
    assert body.index("sqrt(") < body.index("for (int64_t r")
