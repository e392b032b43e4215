"""logaddexp, logaddexp2, hypot, heaviside, fmax/fmin, sinc, logit (and its backward),
round(decimals=), lgamma, digamma, polygamma, vdot and linalg.cross on Loom against the CPU: values (with NaN, infinities
and signed zeros), result dtypes and strides, every dtype's result or error, the in-place
and out= forms, and gradients. None of them falls back to the CPU."""
import pytest
import torch

import loom

D = loom.device
DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.complex64]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.5, 1e30, -1e30, float("inf"), float("-inf"),
           float("nan"), 1e-40, 0.25, 0.75, 100.0]


def values(dtype, seed, n=64):
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([torch.tensor(SPECIAL, dtype=torch.float64),
                   torch.randn(n, generator=g, dtype=torch.float64) * 4])
    if dtype.is_complex:
        return torch.complex(x, x.flip(0)).to(dtype)
    if not dtype.is_floating_point:
        x = torch.nan_to_num(x, nan=0, posinf=7, neginf=-7).clamp(-100, 100)
        return (x > 0) if dtype == torch.bool else x.round().to(dtype)
    return x.to(dtype)


def pairs(dtype, seed):
    """Every special value against every other, then random pairs."""
    a, b = values(dtype, seed), values(dtype, seed + 1)
    s = values(dtype, seed)[:len(SPECIAL)]
    return torch.cat([s.repeat_interleave(len(s)), a]), torch.cat([s.repeat(len(s)), b])


def close(got, want, dtype):
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


def same(fn, *args):
    """fn on CPU and on Loom: the same value, dtype and strides, or the same error."""
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001 - compare whatever the CPU raises
        with pytest.raises(type(e)) as info:
            fn(*[a.to(D) if isinstance(a, torch.Tensor) else a for a in args]).cpu()
        assert str(info.value).split("\n")[0] == str(e).split("\n")[0]
        return None
    loom.reset_metrics()
    got = fn(*[a.to(D) if isinstance(a, torch.Tensor) else a for a in args])
    assert got.stride() == want.stride()
    got = got.cpu()
    assert loom.metrics()["fallbacks"] == {}
    close(got, want, want.dtype)
    return want


BINARY = {
    "logaddexp": torch.logaddexp,
    "logaddexp2": torch.logaddexp2,
    "hypot": torch.hypot,
    "heaviside": torch.heaviside,
    "fmax": torch.fmax,
    "fmin": torch.fmin,
}
UNARY = {
    "sinc": torch.sinc,
    "logit": torch.logit,
    "logit_eps": lambda x: torch.logit(x, eps=0.2),
    "round_2": lambda x: torch.round(x, decimals=2),
    "round_-1": lambda x: torch.round(x, decimals=-1),
    "lgamma": torch.lgamma,
    "digamma": torch.digamma,
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_values_and_dtype_errors(name, dtype):
    a, b = pairs(dtype, 1)
    same(BINARY[name], a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_and_dtype_errors(name, dtype):
    x = values(dtype, 2)
    if name.startswith("logit") and dtype.is_floating_point:
        x = torch.cat([x, torch.linspace(-0.1, 1.1, 25, dtype=dtype)])
    if name.startswith("round") and dtype.is_floating_point:
        x = torch.cat([x, torch.tensor([0.125, 0.135, 2.5, 15.0, 25.0, -35.0], dtype=dtype)])
    same(UNARY[name], x)


@pytest.mark.parametrize("name", BINARY)
def test_binary_forms_broadcast_and_promotion(name):
    fn = BINARY[name]
    a = torch.randn(4, 1, 5) * 3
    b = torch.randn(3, 5).t().contiguous().t() * 3  # transposed strides
    if name == "heaviside":
        same(fn, a, b)
        with pytest.raises(RuntimeError, match="different dtypes"):
            fn(a.to(D), b.double().to(D))
    else:
        same(fn, a, b)
        same(fn, a, b.double())  # promotion
        same(fn, a[0, 0], torch.tensor(2.0))  # a CPU scalar
    same(lambda x, y: fn(x, y, out=torch.empty(0, device=x.device)), a, b)
    if hasattr(torch.Tensor, name + "_"):
        same(lambda x, y: getattr(x.clone(), name + "_")(y), torch.randn(3, 5), b)


@pytest.mark.parametrize("name", UNARY)
def test_unary_forms(name):
    fn = UNARY[name]
    x = torch.rand(6, 7)[:, ::2]
    same(fn, x)
    if name == "sinc":
        same(lambda t: torch.sinc(t, out=torch.empty(0, device=t.device)), x)
        same(lambda t: t.clone().sinc_(), x)
    if name == "logit_eps":
        same(lambda t: torch.logit(t, eps=0.2, out=torch.empty(0, device=t.device)), x)
        same(lambda t: t.clone().logit_(eps=0.2), x)
    if name == "round_2":
        same(lambda t: torch.round(t, decimals=2, out=torch.empty(0, device=t.device)), x)
        same(lambda t: t.clone().round_(decimals=2), x)


@pytest.mark.parametrize("eps", [None, 0.1])
def test_logit_gradient(eps):
    x = torch.cat([torch.linspace(-0.2, 1.2, 29), torch.tensor([0.0, 1.0, float("nan")])])
    grads = []
    for dev in ("cpu", D):
        t = x.clone().to(dev).requires_grad_()
        torch.logit(t, eps=eps).backward(torch.linspace(-1, 1, len(x)).to(dev))
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma(n, dtype):
    x = values(dtype, 3)
    if dtype.is_floating_point:
        x = torch.cat([x, torch.tensor([0.49, 0.5, 0.51, 1.0, 2.0, -3.7, 9.99], dtype=dtype)])
    if dtype != torch.bfloat16 or n < 2:
        same(lambda t: torch.polygamma(n, t), x)
        return
    # bfloat16 with n >= 2: the CPU sums zeta in float, which loses digits to cancellation
    # for negative x; Loom sums in double. Both against the float64 value, rounded.
    got = torch.polygamma(n, x.to(D)).cpu()
    want = torch.polygamma(n, x.double()).to(dtype)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2, equal_nan=True)


def test_polygamma_forms_and_errors():
    x = torch.rand(5, 4)[:, ::2] * 3
    same(lambda t: torch.polygamma(2, t, out=torch.empty(0, device=t.device)), x)
    same(lambda t: t.clone().polygamma_(3), x)
    same(lambda t: torch.polygamma(-1, t), x)


@pytest.mark.parametrize("fn", [torch.lgamma, torch.digamma], ids=["lgamma", "digamma"])
def test_gamma_gradients_on_loom(fn):
    # lgamma's gradient is digamma, digamma's is polygamma(1, x): no CPU fallback.
    x = torch.linspace(-3.7, 6.3, 41)
    grads = []
    for dev in ("cpu", D):
        loom.reset_metrics()
        t = x.clone().to(dev).requires_grad_()
        fn(t).sum().backward()
        grads.append(t.grad.cpu())
    assert loom.metrics()["fallbacks"] == {}
    torch.testing.assert_close(grads[1], grads[0])


def test_gradients_of_the_binary_ops():
    for fn in (torch.logaddexp, torch.logaddexp2, torch.hypot):
        outs = []
        for dev in ("cpu", D):
            g = torch.Generator().manual_seed(4)
            a = torch.randn(5, 3, generator=g).to(dev).requires_grad_()
            b = torch.randn(5, 3, generator=g).to(dev).requires_grad_()
            fn(a, b).sum().backward()
            outs.append((a.grad.cpu(), b.grad.cpu()))
        for got, want in zip(outs[1], outs[0]):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_vdot(dtype):
    a, b = values(dtype, 5, n=7)[-7:], values(dtype, 6, n=7)[-7:]
    if dtype.is_complex:
        # Debian's CPU build returns 0 for complex dot and vdot (its BLAS's complex return
        # convention): compare with the sum of products instead.
        al, bl = a.to(D), b.to(D)
        for x, y, want in [(al, bl, (a.conj() * b).sum()), (al.conj(), bl, (a * b).sum()),
                           (al, bl.conj(), (a.conj() * b.conj()).sum())]:
            torch.testing.assert_close(torch.vdot(x, y).cpu(), want)
        torch.testing.assert_close(torch.dot(al.conj(), bl).cpu(), (a.conj() * b).sum())
        out = torch.empty((), dtype=dtype, device=D)
        torch.vdot(al, bl, out=out)
        torch.testing.assert_close(out.cpu(), (a.conj() * b).sum())
    else:
        same(torch.vdot, a, b)
    same(torch.vdot, a, b.to(torch.float64))  # different dtypes: the CPU's error
    same(torch.vdot, a.reshape(7, 1), b)  # not 1-d


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_linalg_cross_dtypes(dtype):
    a, b = values(dtype, 7, n=30)[-30:].reshape(10, 3), values(dtype, 8, n=30)[-30:].reshape(10, 3)
    same(torch.linalg.cross, a, b)


def test_linalg_cross_dims_broadcast_and_errors():
    g = torch.Generator().manual_seed(9)
    a, b = torch.randn(4, 3, 5, generator=g), torch.randn(1, 3, 5, generator=g)
    same(lambda x, y: torch.linalg.cross(x, y, dim=1), a, b)
    same(lambda x, y: torch.linalg.cross(x, y, dim=-2), a.transpose(0, 2), b.transpose(0, 2))
    same(lambda x, y: torch.cross(x, y), a, b)  # the first dim of size 3
    same(lambda x, y: torch.linalg.cross(x, y, dim=1, out=torch.empty(0, device=x.device)), a, b)
    same(lambda x, y: torch.linalg.cross(x, y), a, b)  # last dim has size 5
    same(lambda x, y: torch.linalg.cross(x, y, dim=1), a, b.double())
    same(lambda x, y: torch.linalg.cross(x, y, dim=1), a, b[0])
