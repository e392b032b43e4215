"""The regularized incomplete gamma functions igamma (P) and igammac (Q) on Loom
(codegen/igamma_c.cpp): accuracy against high-precision reference values, agreement with the
CPU, its boundary values and dtype rules, the in-place and out= forms, and the gradient in x.
None of them falls back."""
import pytest
import torch

import loom

D = loom.device

# (a, x) and P, Q there (30-digit arithmetic).
POINTS = [(0.5, 0.1), (0.5, 3.0), (1.0, 1.0), (2.5, 0.7), (7.0, 7.5), (10.13, 8.148),
          (25.74, 0.000116), (30.0, 45.0), (150.0, 140.0), (1000.0, 1030.0), (1e5, 1e5 - 300),
          (0.001, 1e-05)]
P = [0.34527915398142298, 0.98569412156457036, 0.63212055882855768, 0.075686727198333053,
     0.62184530567653068, 0.28707403244710745, 2.9038625944306558e-128, 0.9926628007022035,
     0.20954362391860707, 0.82891190388239396, 0.17141731451450292, 0.98912304469578267]
Q = [0.65472084601857702, 0.01430587843542964, 0.36787944117144232, 0.92431327280166695,
     0.37815469432346932, 0.71292596755289255, 1.0, 0.0073371992977965036, 0.79045637608139293,
     0.17108809611760604, 0.82858268548549708, 0.010876955304217331]
FNS = {"igamma": (torch.igamma, P), "igammac": (torch.igammac, Q)}


def run(fn, a, x):
    loom.reset_metrics()
    y = fn(a.to(D), x.to(D)).cpu()
    assert loom.metrics()["fallbacks"] == {}
    return y


@pytest.mark.parametrize("name", sorted(FNS))
def test_accuracy_against_reference_values(name):
    fn, ref = FNS[name]
    a = torch.tensor([p[0] for p in POINTS], dtype=torch.float64)
    x = torch.tensor([p[1] for p in POINTS], dtype=torch.float64)
    torch.testing.assert_close(run(fn, a, x), torch.tensor(ref, dtype=torch.float64),
                               rtol=1e-11, atol=0)


@pytest.mark.parametrize("name", sorted(FNS))
def test_agrees_with_the_cpu(name):
    fn = FNS[name][0]
    g = torch.Generator().manual_seed(4)
    a = torch.cat([torch.rand(300, generator=g, dtype=torch.float64) * 30,
                   torch.logspace(-3, 3, 100, dtype=torch.float64)])
    x = a * (torch.rand(400, generator=g, dtype=torch.float64) + 0.5)
    x[::3] = torch.rand(134, generator=g, dtype=torch.float64) * 50
    torch.testing.assert_close(run(fn, a, x), fn(a, x), rtol=1e-7, atol=1e-12)
    for dt, tol in ((torch.float32, 1e-5), (torch.float16, 1e-3), (torch.bfloat16, 1e-2)):
        got, want = run(fn, a.to(dt), x.to(dt)), fn(a.to(dt), x.to(dt))
        assert got.dtype == want.dtype == dt
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(FNS))
def test_boundary_values_as_the_cpu(name):
    fn = FNS[name][0]
    inf, nan = float("inf"), float("nan")
    a = torch.tensor([0.0, 0.0, 1.0, inf, inf, 2.0, nan, 1.0, -1.0, 1.0, 3.0], dtype=torch.float64)
    x = torch.tensor([0.0, 1.0, 0.0, 1.0, inf, inf, 1.0, nan, 1.0, -1.0, 1e-300],
                     dtype=torch.float64)
    got, want = run(fn, a, x), fn(a, x)
    torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=1e-300)


def test_forms_dtypes_and_gradient():
    a = torch.tensor([[0.5, 2.0, 9.0]], dtype=torch.float64)
    x = torch.tensor([[0.3], [4.0]], dtype=torch.float64)
    for fn in (torch.igamma, torch.igammac):
        torch.testing.assert_close(run(fn, a, x), fn(a, x))  # broadcast
    al = a.expand(2, 3).clone().to(D)
    al.igamma_(x.to(D))
    torch.testing.assert_close(al.cpu(), torch.igamma(a, x))
    out = torch.empty(3, 2, dtype=torch.float64, device=D).t()
    torch.igammac(a.to(D), x.to(D), out=out)
    torch.testing.assert_close(out.cpu(), torch.igammac(a, x))
    assert torch.special.gammainc(a.to(D), x.to(D)).cpu().equal(run(torch.igamma, a, x))
    errs = []
    for dev in ("cpu", D):
        with pytest.raises(RuntimeError) as info:
            torch.igamma(torch.tensor([1, 2], device=dev), torch.tensor([3, 4], device=dev))
        errs.append(str(info.value))
    assert errs[0] == errs[1]
    xs = [x.expand(2, 3).clone().requires_grad_() for _ in range(2)]
    torch.igamma(a, xs[0]).sum().backward()
    xl = xs[1].detach().to(D).requires_grad_()
    torch.igamma(a.to(D), xl).sum().backward()
    torch.testing.assert_close(xl.grad.cpu(), xs[0].grad)
