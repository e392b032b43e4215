"""Layer norm and GELU forward on Loom against CPU torch."""
import pytest
import torch
import torch.nn.functional as F

import loom


def _on_loom_only(fn):
    loom.reset_metrics()
    r = fn()
    assert loom.metrics()["fallbacks"] == {}
    return r


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,norm", [((8, 16), (16,)), ((3, 5, 70), (5, 70)), ((4, 1), (1,)),
                                        ((0, 6), (6,)), ((2, 3, 40), (40,))])
def test_layer_norm(dtype, affine, shape, norm):
    if dtype == torch.bfloat16 and norm == (1,):
        pytest.skip("the CPU's bfloat16 mean differs from x: (x - mean) * 316 is noise")
    g = torch.Generator().manual_seed(len(shape))
    x = (torch.randn(shape, generator=g) * 3 + 1).to(dtype)
    w = torch.randn(norm, generator=g).to(dtype) if affine else None
    b = torch.randn(norm, generator=g).to(dtype) if affine else None
    want = torch.native_layer_norm(x, norm, w, b, 1e-5)
    dev = lambda t: None if t is None else t.to(loom.device)  # noqa: E731
    got = _on_loom_only(lambda: torch.native_layer_norm(dev(x), norm, dev(w), dev(b), 1e-5))
    # The CPU computes x * (rstd * w) + (b - rstd * mean * w), Loom (x - mean) * rstd * w + b:
    # with a size-1 norm rstd is 1/sqrt(eps) and rounding differences grow by as much.
    # bfloat16: the CPU rounds its statistics to bfloat16 on the way; Loom keeps float.
    tol = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-7, atol=1e-7),
           torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}[dtype]
    for gt, wt in zip(got, want):
        assert gt.device == loom.device and gt.dtype == wt.dtype and gt.shape == wt.shape
        torch.testing.assert_close(gt.cpu(), wt, **tol)


def test_layer_norm_strided_and_module():
    x = torch.randn(20, 30).t()
    ln = torch.nn.LayerNorm(20)
    want = ln(x)
    ln_l = torch.nn.LayerNorm(20).to(loom.device)
    ln_l.load_state_dict(ln.state_dict())
    got = _on_loom_only(lambda: ln_l(x.to(loom.device)))
    torch.testing.assert_close(got.cpu(), want.detach(), rtol=1e-5, atol=1e-5)


def test_layer_norm_backward_falls_back_and_matches():
    x = torch.randn(6, 10, requires_grad=True)
    xl = x.detach().to(loom.device).requires_grad_()
    F.layer_norm(x, (10,)).pow(2).sum().backward()
    F.layer_norm(xl, (10,)).pow(2).sum().backward()
    torch.testing.assert_close(xl.grad.cpu(), x.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(dtype, approximate):
    x = torch.cat([torch.linspace(-10, 10, 2001), torch.tensor([0.0, -0.0, float("inf"),
                                                                float("-inf"), float("nan")])])
    x = x.to(dtype)
    # bfloat16: Loom computes in float and rounds once; the CPU rounds 1 + erf(...) to
    # bfloat16 first (0 below -3), so the reference is the float result, rounded.
    want = F.gelu(x.float() if dtype == torch.bfloat16 else x, approximate=approximate).to(dtype)
    got = _on_loom_only(lambda: F.gelu(x.to(loom.device), approximate=approximate))
    assert got.dtype == want.dtype
    tol = dict(rtol=4e-6, atol=1e-6) if dtype == torch.float32 else {}
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **tol)
    out = torch.empty(3, device=loom.device, dtype=dtype)
    _on_loom_only(lambda: torch._C._nn.gelu(x.to(loom.device), approximate=approximate, out=out))
    torch.testing.assert_close(out.cpu(), want, equal_nan=True, **tol)


def test_layer_norm_gelu_kernels(fresh_metrics):
    x = torch.randn(64, 256).to(loom.device)
    w = torch.randn(256).to(loom.device)
    b = torch.randn(256).to(loom.device)
    loom.sync()
    loom.reset_metrics()
    y = F.gelu(F.layer_norm(x, (256,), w, b))
    y.cpu()
    m = loom.metrics()
    assert m["fallbacks"] == {}
    # mean and variance hoisted out of each row's loop, normalisation, affine and GELU
    assert m["kernels_run"] == 1
