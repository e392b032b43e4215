"""acosh/asinh/atanh, erfc, erfinv, ndtri, the Bessel functions I0/I1 (plain and scaled),
entr, xlog1py, zeta, the orthogonal polynomials, copysign, nextafter, gcd/lcm, signbit, isposinf/isneginf, nan_to_num,
frexp and the shrinks on Loom against the CPU: values over special and random inputs in
every dtype (or the CPU's error), the out= and in-place forms, and gradients. None of them
falls back to the CPU."""
import math

import pytest
import torch
import torch.nn.functional as F

import loom
from test_special import DTYPES, pairs, same, values

D = loom.device

UNARY = {
    "acosh": torch.acosh,
    "asinh": torch.asinh,
    "atanh": torch.atanh,
    "erfc": torch.erfc,
    "erfinv": torch.erfinv,
    "i0": torch.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    "modified_bessel_i0": torch.special.modified_bessel_i0,
    "modified_bessel_i1": torch.special.modified_bessel_i1,
    "ndtri": torch.special.ndtri,
    "entr": torch.special.entr,
    "signbit": torch.signbit,
    "isposinf": torch.isposinf,
    "isneginf": torch.isneginf,
    "nan_to_num": torch.nan_to_num,
    "nan_to_num_args": lambda x: torch.nan_to_num(x, nan=1.5, posinf=2.5, neginf=-3.5),
    "hardshrink": lambda x: F.hardshrink(x, 0.7),
    "softshrink": lambda x: F.softshrink(x, 0.7),
}
BINARY = {
    "copysign": torch.copysign,
    "nextafter": torch.nextafter,
    "gcd": torch.gcd,
    "lcm": torch.lcm,
    "xlog1py": torch.special.xlog1py,
    "zeta": torch.special.zeta,
}
# Inputs inside each function's domain besides the special values: erfinv's (-1, 1),
# ndtri's (0, 1) with its tails, the Bessel series' switch at 30 and large arguments.
EXTRA = [-0.999999, -0.75, -0.5, -1e-8, 1e-8, 0.3, 0.5, 0.9, 0.999999, 1e-300, 1e-20,
         29.5, 30.0, 30.5, 85.0, 700.0, -750.0]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_and_dtype_errors(name, dtype):
    x = values(dtype, 3)
    if dtype.is_floating_point:
        x = torch.cat([x, torch.tensor(EXTRA).to(dtype), torch.rand(64).to(dtype)])
    same(UNARY[name], x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_values_and_dtype_errors(name, dtype):
    a, b = pairs(dtype, 4)
    same(BINARY[name], a, b)


def test_nextafter_steps_one_unit_in_each_float_dtype():
    a = torch.tensor([0.0, -0.0, 0.0, 1.0, -1.0, 2.0, 3.0, float("nan"), 1.0, float("inf")])
    b = torch.tensor([1.0, -1.0, -1.0, 2.0, 0.0, float("inf"), 3.0, 0.0, float("nan"), 0.0])
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        got = torch.nextafter(a.to(dtype).to(D), b.to(dtype).to(D)).cpu()
        want = torch.nextafter(a.to(dtype), b.to(dtype))
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got.nan_to_num(), want.nan_to_num())
        assert torch.equal(got.signbit(), want.signbit())


def test_inverse_error_functions_are_inverses_in_double():
    y = torch.cat([torch.linspace(-0.9999, 0.9999, 2001, dtype=torch.float64),
                   torch.tensor([1 - 1e-15, -1 + 1e-15], dtype=torch.float64)])
    x = torch.erfinv(y.to(D)).cpu()
    torch.testing.assert_close(torch.erf(x), y, rtol=0, atol=4e-16)
    p = torch.cat([torch.logspace(-300, -1, 300, dtype=torch.float64),
                   torch.linspace(0.01, 0.99, 99, dtype=torch.float64)])
    q = torch.special.ndtri(p.to(D)).cpu()
    # the tails amplify the rounding of q / sqrt(2) by about 2 q^2 / 2 (~700 at p = 1e-300)
    torch.testing.assert_close(0.5 * torch.erfc(-q / math.sqrt(2)), p, rtol=1e-11, atol=0)
    torch.testing.assert_close(q, torch.special.ndtri(p), rtol=1e-13, atol=0)


def test_frexp_parts_and_checks():
    x = torch.cat([torch.tensor([0.0, -0.0, 1.0, -3.0, 1e-40, 1e30, float("inf"), float("nan")]),
                   torch.randn(50) * 1e3])
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        m, e = torch.frexp(x.to(dtype).to(D))
        wm, we = torch.frexp(x.to(dtype))
        assert e.dtype == torch.int32 and m.dtype == dtype
        assert torch.equal(e.cpu(), we)
        torch.testing.assert_close(m.cpu(), wm, rtol=0, atol=0, equal_nan=True)
    same(lambda t: torch.frexp(t, out=(torch.empty(0, device=t.device),
                                       torch.empty(0, dtype=torch.int32, device=t.device)))[0],
         x)
    same(torch.frexp, torch.arange(3))
    same(lambda t: torch.frexp(t, out=(torch.empty(0, dtype=torch.double, device=t.device),
                                       torch.empty(0, dtype=torch.int32, device=t.device))), x)
    same(lambda t: torch.frexp(t, out=(torch.empty(0, device=t.device),
                                       torch.empty(0, device=t.device))), x)


@pytest.mark.parametrize("name", ["acosh", "asinh", "atanh", "erfc", "erfinv", "i0",
                                  "nan_to_num"])
def test_unary_forms(name):
    x = (torch.rand(6, 7)[:, ::2] * 1.8 - 0.9)
    if name == "acosh":
        x = x + 2
    fn = UNARY[name]
    same(fn, x)
    same(lambda t: fn(t, out=torch.empty(0, device=t.device)), x)
    same(lambda t: getattr(t.clone(), name + "_")(), x)
    same(lambda t: getattr(t.clone(), name + "_")(), torch.arange(4))  # int in place: error


@pytest.mark.parametrize("name", ["copysign", "nextafter", "gcd", "lcm"])
def test_binary_forms(name):
    fn = BINARY[name]
    if name in ("gcd", "lcm"):
        a, b = torch.randint(-50, 50, (4, 1, 5)), torch.randint(-50, 50, (5, 3)).t()
    else:
        a, b = torch.randn(4, 1, 5), torch.randn(5, 3).t()
    same(fn, a, b)
    same(lambda x, y: fn(x, y, out=torch.empty(0, dtype=a.dtype, device=x.device)), a, b)
    same(lambda x, y: getattr(x.clone(), name + "_")(y), a[0], b)


def test_complex_inverse_hyperbolic():
    z = torch.complex(torch.randn(40, dtype=torch.float64), torch.randn(40, dtype=torch.float64))
    for fn in (torch.acosh, torch.asinh, torch.atanh):
        same(fn, z)
        same(fn, z.to(torch.complex64))


@pytest.mark.parametrize("name", ["acosh", "asinh", "atanh", "erfc", "erfinv", "i0", "i0e",
                                  "i1", "i1e", "ndtri", "entr", "hardshrink", "softshrink",
                                  "xlog1py", "copysign", "zeta"])
def test_gradients(name):
    if name in BINARY:
        a = torch.rand(20, dtype=torch.float64) + 1.5
        b = torch.rand(20, dtype=torch.float64) * 2 - 1 if name == "copysign" else \
            torch.rand(20, dtype=torch.float64) + 0.5
        fn = BINARY[name]
        args = [a, b] if name != "zeta" else [a + 1, b]
        grads = []
        for dev in ("cpu", D):
            ts = [t.to(dev).requires_grad_(name != "zeta" or i == 1) for i, t in enumerate(args)]
            fn(*ts).sum().backward()
            grads.append([t.grad.cpu() for t in ts if t.grad is not None])
        for g, w in zip(*grads):
            torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-12)
        return
    x = torch.rand(30, dtype=torch.float64) * 1.8 - 0.9
    if name == "acosh":
        x = x + 2
    if name in ("ndtri", "entr"):
        x = x.abs() + 0.01
    grads = []
    for dev in ("cpu", D):
        t = x.clone().to(dev).requires_grad_()
        UNARY[name](t).backward(torch.linspace(-1, 1, len(x), dtype=torch.float64).to(dev))
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-10, atol=1e-12)


def test_shrink_backward_ops_directly():
    g, x = torch.randn(5, 6), torch.randn(5, 6)
    for op in (torch.ops.aten.hardshrink_backward, torch.ops.aten.softshrink_backward):
        same(lambda a, b: op(a, b, 0.5), g, x)
    same(lambda t: F.softshrink(t, -1.0), x)  # negative lambda: the CPU's error


def test_spherical_bessel_j0():
    x = torch.cat([torch.tensor([0.0, -0.0, 0.49, 0.5, -0.51, 1e-20, float("inf"), float("-inf"),
                                 float("nan"), 100.0]), torch.randn(60) * 5])
    for dtype in (torch.float32, torch.float64):
        same(torch.special.spherical_bessel_j0, x.to(dtype))
    same(torch.special.spherical_bessel_j0, torch.arange(5))  # integers promote
    same(torch.special.spherical_bessel_j0, x.to(torch.bfloat16))  # the CPU's error


def test_erfcx_and_log_ndtr():
    x = torch.cat([torch.tensor([0.0, -0.0, 1.0, -1.0, -1.0001, 25.9, 26.0, 26.1, 1e3, 1e300,
                                 -26.0, -27.0, float("inf"), float("-inf"), float("nan")]),
                   torch.randn(60) * 10])
    for dtype in (torch.float32, torch.float64):
        same(torch.special.erfcx, x.to(dtype))
        same(torch.special.log_ndtr, x.to(dtype))
    same(torch.special.erfcx, torch.arange(-3, 3))
    same(torch.special.log_ndtr, x.to(torch.bfloat16))  # the CPU's error
    grads = []
    for dev in ("cpu", D):
        t = torch.linspace(-5, 5, 21, dtype=torch.float64).to(dev).requires_grad_()
        (torch.special.erfcx(t) + torch.special.log_ndtr(t)).sum().backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials(name, dtype):
    # Degrees -1..13 reach every branch: negative, 0, 1, the recurrences, and the closed
    # forms past degree 4, 6 or 8; x covers both intervals' ends and the points where a
    # closed form's denominator vanishes. Other dtypes get the CPU's error.
    fn = getattr(torch.special, name)
    x = torch.cat([torch.linspace(-1.5, 1.5, 31), torch.tensor(
        [-1.0, 0.0, 1.0, 0.5, -0.5, 1e-3, float("nan"), float("inf"), float("-inf")])])
    n = torch.arange(-1.0, 14.0)
    a, b = torch.broadcast_tensors(x[:, None], n[None, :])
    want = same(fn, a.to(dtype), b.to(dtype))
    if dtype in (torch.float32, torch.float64):  # the CPU's arithmetic, step by step
        got = fn(a.to(dtype).to(D), b.to(dtype).to(D)).cpu()
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got.nan_to_num(), want.nan_to_num())
    if dtype.is_floating_point:
        p, q = pairs(dtype, 6)
        same(fn, p, q.double().clamp(-3, 40).to(dtype))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomial_forms(name):
    fn = getattr(torch.special, name)
    x, n = torch.randn(4, 1, 5, dtype=torch.float64), torch.randint(0, 12, (5, 3)).t()
    same(fn, x, n)  # broadcast, a transposed degree, int degrees promoted
    same(lambda a, b: fn(a, b, out=torch.empty(0, dtype=a.dtype, device=a.device)), x, n)
    same(lambda a: fn(a, 7), x)
    same(lambda b: fn(0.25, b), n.double())
