"""complex64/complex128 on Loom vs CPU torch: factories, transfers, casts, elementwise ops
(special values included), reductions, views that share storage with real dtypes
(view_as_real/view_as_complex, .real/.imag, view(dtype)), the conjugate bit, indexing, and
the CPU's errors for what it does not support on complex. Every test asserts that nothing
ran as a CPU fallback.
"""
import math

import pytest
import torch

import loom
from cpu_paths import COMPLEX_DIVISION_FORMS_DIFFER, scalar_form

D = loom.device
COMPLEX = [torch.complex64, torch.complex128]
REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64}
TOL = {torch.complex64: dict(rtol=2e-5, atol=2e-6), torch.float32: dict(rtol=2e-5, atol=2e-6)}


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def sample(shape, dtype, seed=0, lo=-2.0, hi=2.0):
    g = torch.Generator().manual_seed(seed)
    re = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    im = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    return torch.complex(re, im).to(dtype)


def layouts(dtype):
    """A contiguous, a transposed, a stepped and an offset tensor of shape (3, 4)."""
    return {
        "contiguous": sample((3, 4), dtype),
        "transposed": sample((4, 3), dtype, seed=1).t(),
        "stepped": sample((3, 8), dtype, seed=2)[:, ::2],
        "offset": sample((4, 5), dtype, seed=3)[1:, 1:],
    }


def to_loom(a):
    return a.to(D) if isinstance(a, torch.Tensor) else a


def compare(got, want, tol=None):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            compare(g, w, tol)
        return
    assert got.device.type == D.type
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    kw = tol if tol is not None else TOL.get(want.dtype, {})
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **kw)


def check(fn, *args, tol=None, scalar_cpu=False):
    """fn on CPU args and on their Loom copies: equal results, or the same exception. With
    scalar_cpu, a quotient: the CPU's values are its scalar form's (cpu_paths)."""
    try:
        want = fn(*args)
        if scalar_cpu and COMPLEX_DIVISION_FORMS_DIFFER:
            want = scalar_form(fn, *args)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)) as got:
            fn(*[to_loom(a) for a in args])
        assert str(got.value).split("\n")[0] == str(e).split("\n")[0]
        return None
    got = fn(*[to_loom(a) for a in args])
    compare(got, want, tol)
    return got


def same_view(got, want):
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got._is_view() == want._is_view()
    assert got.is_conj() == want.is_conj()
    assert got.is_neg() == want.is_neg()


# --- factories, transfers, printing ---

@pytest.mark.parametrize("dtype", COMPLEX)
def test_factories(dtype):
    compare(torch.zeros(2, 3, dtype=dtype, device=D), torch.zeros(2, 3, dtype=dtype))
    compare(torch.ones(4, dtype=dtype, device=D), torch.ones(4, dtype=dtype))
    compare(torch.full((2, 2), 1.5 - 2j, dtype=dtype, device=D),
            torch.full((2, 2), 1.5 - 2j, dtype=dtype))
    compare(torch.eye(3, dtype=dtype, device=D), torch.eye(3, dtype=dtype))
    e = torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=D)
    assert e.stride() == (1, 2) and e.dtype == dtype
    assert torch.empty(5, dtype=dtype, device=D).storage().nbytes() == 5 * (
        8 if dtype == torch.complex64 else 16)


def test_full_infers_complex():
    compare(torch.full((3,), 2 + 1j, device=D), torch.full((3,), 2 + 1j))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("args", [(0, 10, 37), (-1 + 2j, 3 - 1j, 37), (1 + 1j, 2, 1),
                                  (2j, -2j, 5), (0, 1, 0)])
def test_linspace(dtype, args):
    compare(torch.linspace(*args, dtype=dtype, device=D), torch.linspace(*args, dtype=dtype),
            tol=dict(rtol=1e-5, atol=1e-5))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_random_fills(dtype):
    torch.manual_seed(0)
    n = torch.randn(20000, dtype=dtype, device=D).cpu()
    assert n.dtype == dtype
    # Each part has variance 1/2, as on the CPU.
    assert abs(n.real.var().item() - 0.5) < 0.03 and abs(n.imag.var().item() - 0.5) < 0.03
    assert abs(n.real.mean().item()) < 0.03 and abs(n.imag.mean().item()) < 0.03
    u = torch.rand(1000, dtype=dtype, device=D).cpu()
    for part in (u.real, u.imag):
        assert part.min() >= 0 and part.max() < 1 and part.std() > 0.2
    v = torch.empty(100, dtype=dtype, device=D).uniform_(2, 3).cpu()
    assert v.real.min() >= 2 and v.imag.max() < 3
    m = torch.normal(torch.full((1000,), 5 + 5j, dtype=dtype, device=D), 0.1).cpu()
    assert m.dtype == dtype and abs(m.mean() - (5 + 5j)) < 0.05


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("kind", ["contiguous", "transposed", "stepped", "offset"])
def test_transfer_roundtrip(dtype, kind):
    x = layouts(dtype)[kind]
    y = x.to(D)
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y.cpu(), x)
    # Into an existing strided Loom tensor, and back into a strided CPU tensor.
    z = torch.zeros(4, 3, dtype=dtype, device=D).t()
    z.copy_(x)
    assert torch.equal(z.cpu(), x)
    back = torch.zeros(4, 3, dtype=dtype).t()
    back.copy_(y)
    assert torch.equal(back, x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_item_tolist_and_printing(dtype):
    x = torch.tensor([[1 + 2j, -0.5 + 0j], [0j, 3.25 - 1e-3j]], dtype=dtype)
    y = x.to(D)
    assert y[0, 0].item() == 1 + 2j
    assert y.tolist() == x.tolist()
    def norm(s):
        return " ".join(s.replace(f", device='{D}'", "").split())

    assert norm(repr(y)) == norm(repr(x))
    assert norm(str(y.conj())) == norm(str(x.conj()))
    assert norm(str(y.real)) == norm(str(x.real))


# --- casts ---

CAST_TARGETS = [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32,
                torch.uint8, torch.bool, torch.complex64, torch.complex128]


@pytest.mark.parametrize("src", COMPLEX)
@pytest.mark.parametrize("dst", CAST_TARGETS)
def test_cast_from_complex(src, dst):
    x = torch.tensor([1.75 + 2j, -3.25 - 0.5j, 0j, 1j, 7 + 0j, 0.5 - 4j], dtype=src)
    check(lambda t: t.to(dst), x)


@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                 torch.int64, torch.int8, torch.uint8, torch.bool])
@pytest.mark.parametrize("dst", COMPLEX)
def test_cast_to_complex(src, dst):
    x = torch.tensor([1.5, -2.0, 0.0, 3.0, 1.0]).to(src)
    got = check(lambda t: t.to(dst), x)
    assert torch.all(got.imag.cpu() == 0)


def test_copy_complex_into_real_takes_real_part():
    x = torch.tensor([1 + 2j, -3 - 4j])
    dst = torch.zeros(2, device=D)
    dst.copy_(x.to(D))
    assert torch.equal(dst.cpu(), torch.tensor([1.0, -3.0]))


def test_copy_complex_into_real_warns():
    code = ("import warnings, torch, loom\n"
            "warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    torch.zeros(2, device=loom.device).copy_(torch.ones(2, dtype=torch.complex64,"
            " device=loom.device))\n"
            "print(any('discards the imaginary part' in str(x.message) for x in w))\n")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "True"


# --- elementwise ---

UNARY = ["abs", "neg", "exp", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "reciprocal", "sgn",
         "isnan", "isinf", "isfinite", "logical_not", "conj_physical", "angle", "square"]
UNSUPPORTED_UNARY = ["exp2", "expm1", "log1p", "erf", "round", "frac", "bitwise_not", "relu",
                     "floor", "ceil", "trunc", "sign"]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", UNARY)
def test_unary(op, dtype):
    for kind, x in layouts(dtype).items():
        check(getattr(torch, op), x)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", [o for o in UNARY if hasattr(torch.Tensor, o + "_")])
def test_unary_inplace_and_out(op, dtype):
    x = sample((3, 4), dtype)
    check(lambda t: getattr(t.clone(), op + "_")(), x)
    check(lambda t: getattr(t.clone().t(), op + "_")(), x)  # into a transposed view
    out_dtype = REAL_OF[dtype] if op in ("abs", "angle") else dtype
    check(lambda t: getattr(torch, op)(t, out=torch.empty(0, dtype=out_dtype, device=t.device)), x)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", UNSUPPORTED_UNARY)
def test_unary_unsupported_raises_cpu_error(op, dtype):
    check(getattr(torch, op), sample((3,), dtype))


BINARY = ["add", "sub", "mul", "div", "pow", "eq", "ne", "logical_and", "logical_or",
          "logical_xor"]
UNSUPPORTED_BINARY = ["remainder", "fmod", "atan2", "lt", "le", "gt", "ge", "bitwise_and",
                      "bitwise_or", "bitwise_xor", "maximum", "minimum", "floor_divide",
                      "bitwise_left_shift", "bitwise_right_shift"]


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", BINARY)
def test_binary(op, dtype):
    f = getattr(torch, op)
    xs = layouts(dtype)
    y = sample((3, 4), dtype, seed=9)
    s = dict(scalar_cpu=op == "div")
    for x in xs.values():
        check(f, x, y, **s)
    check(f, xs["transposed"], y.real.contiguous(), **s)  # complex with real
    check(f, y.imag.contiguous(), xs["stepped"], **s)  # real with complex
    check(f, xs["offset"], (torch.arange(12).reshape(3, 4) - 5), **s)  # with int64
    check(lambda a: f(a, 2), xs["contiguous"], **s)  # with Python scalars
    check(lambda a: f(a, 0.5 - 1.5j), xs["contiguous"], **s)
    check(lambda a: f(1.5 + 2j, a) if op != "pow" else a, xs["contiguous"], **s)
    check(lambda a, b: f(a, b[0]), xs["transposed"], y, **s)  # broadcast


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_binary_inplace_and_out(op, dtype):
    x, y = sample((3, 4), dtype), sample((3, 4), dtype, seed=1)
    check(lambda a, b: getattr(a.clone(), op + "_")(b), x, y)
    check(lambda a, b: getattr(a.clone().t(), op + "_")(b.t()), x, y)
    check(lambda a, b: getattr(torch, op)(a, b, out=torch.empty(0, dtype=dtype, device=a.device)),
          x, y)
    # A real tensor cannot take a complex result in place: CPU's error.
    check(lambda a, b: getattr(a.real.clone(), op + "_")(b), x, y)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("op", UNSUPPORTED_BINARY)
def test_binary_unsupported_raises_cpu_error(op, dtype):
    x, y = sample((3,), dtype), sample((3,), dtype, seed=1)
    check(getattr(torch, op), x, y)
    check(lambda a: getattr(torch, op)(a, 1), x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_div_rounding_modes_raise(dtype):
    x = sample((3,), dtype)
    check(lambda a: torch.div(a, a, rounding_mode="trunc"), x)
    check(lambda a: torch.div(a, a, rounding_mode="floor"), x)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("e", [0, 1, 2, 3, -2, 0.5, -0.5, -1, 2.5, 1j, 1 - 1j])
def test_pow_scalar_exponent(e, dtype):
    x = sample((3, 4), dtype)
    check(lambda a: a ** e, x)
    check(lambda a: a.clone().pow_(e), x)
    check(lambda a: e ** a, x)


def test_pow_shortcuts_are_exact():
    # x ** 2 is x * x (as on the CPU), not exp(2 log x).
    x = torch.tensor([1 + 1j, 3 - 2j])
    assert torch.equal((x.to(D) ** 2).cpu(), torch.tensor([2j, 5 - 12j]))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_ternary_and_misc(dtype):
    x, y = sample((3, 4), dtype), sample((3, 4), dtype, seed=1)
    cond = torch.rand(3, 4, generator=torch.Generator().manual_seed(5)) > 0.5
    check(lambda c, a, b: torch.where(c, a, b), cond, x, y)
    check(lambda c, a: torch.where(c, a, 2j), cond, x)
    check(lambda c, a, b: torch.where(c, a, b), cond, x, y.real.contiguous())
    check(lambda a, b: torch.lerp(a, b, 0.3), x, y)
    check(lambda a, b: torch.lerp(a, b, torch.full_like(a, 0.75 + 0.25j)), x, y)
    check(lambda a, b: torch.addcmul(a, a, b, value=2j), x, y)
    check(lambda a, b: torch.addcdiv(a, a, b, value=0.5), x, y)
    check(lambda a: a.clamp(0, 1), x)
    check(lambda a, b: torch.complex(a.real, b.imag), x, y)
    check(lambda a: torch.polar(a.abs(), a.angle()), x)
    check(lambda a: torch.isclose(a, a + 1e-9), x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_fill_and_zero(dtype):
    x = sample((3, 4), dtype)
    check(lambda a: a.clone().fill_(1 - 2j), x)
    check(lambda a: a.t().fill_(3), x)
    check(lambda a: a.clone().fill_(torch.tensor(3 + 1j)), x)
    check(lambda a: a.clone().zero_(), x)
    # Into a real tensor, a complex value is the CPU's conversion error.
    check(lambda a: a.real.clone().fill_(1j), x)
    check(lambda a: a.real.to(torch.int32).fill_(1 + 1j), x)
    check(lambda a: a.real.clone().masked_fill_(a.real > 0, 1j), x)


def test_fill_checks_integer_range_like_cpu():
    check(lambda a: a.fill_(300), torch.zeros(3, dtype=torch.uint8))
    check(lambda a: a.masked_fill_(a == 0, 300), torch.zeros(3, dtype=torch.uint8))


# NOTE: CPU's kernels compute z * w, z / w, 1 / z and |z| with the plain formulas (not C's
# Annex G): (1+1j)/0 is nan+nanj, 1/(inf+0j) is nan+nanj, (inf+0j)*(1+0j) is inf+nanj.
# Loom uses the same formulas. exp(z) and |z| are compared where the CPU takes its
# vectorized path (16 elements, no scalar tail), which is the formula Loom uses too.
SPECIALS = [0j, 1 + 1j, complex(math.inf, 0), complex(0, math.inf), complex(math.nan, 1),
            complex(-math.inf, -math.inf), 1e30 + 1e30j, -0.0 - 0.0j, 1e-30 + 1e-30j,
            complex(math.inf, math.nan), 2 - 3j, -1j, 3 + 0j, 1e20 - 1e20j, 0.5 + 0j, -7j]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_special_values(dtype):
    x = torch.tensor(SPECIALS, dtype=dtype)
    y = x.flip(0)
    for fn in (torch.mul, torch.div, torch.add, torch.sub, torch.eq, torch.ne):
        check(fn, x, y, scalar_cpu=fn is torch.div)
    for fn in (torch.reciprocal, torch.abs, torch.exp, torch.neg, torch.isnan, torch.isinf,
               torch.isfinite, torch.sgn):
        check(fn, x, scalar_cpu=fn is torch.reciprocal)
    check(lambda a: a / 0, x, scalar_cpu=True)


# --- reductions ---

@pytest.mark.parametrize("dtype", COMPLEX)
def test_reductions(dtype):
    x = sample((3, 4, 5), dtype)
    t = x.permute(2, 0, 1)
    for a in (x, t):
        check(lambda v: v.sum(), a)
        check(lambda v: v.sum((0, 2)), a)
        check(lambda v: v.sum(1, keepdim=True), a)
        check(lambda v: v.sum(dtype=torch.complex128), a)
        check(lambda v: v.mean(), a)
        check(lambda v: v.mean(0), a)
        check(lambda v: v.prod(1), a, tol=dict(rtol=1e-4, atol=1e-4))
        check(lambda v: v.cumsum(2), a)
        check(lambda v: v.cumprod(0), a, tol=dict(rtol=1e-4, atol=1e-4))
        check(lambda v: v.var(), a)
        check(lambda v: v.var(1), a)
        check(lambda v: v.std(0, correction=0), a)
        check(lambda v: torch.var_mean(v, 2), a)
        check(lambda v: torch.std_mean(v), a)
        check(lambda v: v.all(), a)
        check(lambda v: (v * (v.real > 0)).any(1), a)
        for p in (2, 1, 3, math.inf, -math.inf, 0):
            check(lambda v: torch.linalg.vector_norm(v, p, 1), a, tol=dict(rtol=1e-4, atol=1e-5))
    check(lambda v: v[0].trace(), x)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("fn", [lambda v: v.amax(0), lambda v: v.amin(), lambda v: v.max(),
                                lambda v: v.min(0), lambda v: v.argmax(), lambda v: v.argmin(0),
                                lambda v: v.softmax(0), lambda v: v.log_softmax(1),
                                lambda v: v.softmax(1), lambda v: v.logsumexp(0)])
def test_reductions_unsupported_raise_cpu_error(fn, dtype):
    check(fn, sample((3, 4), dtype))


# --- views over the same storage ---

@pytest.mark.parametrize("dtype", COMPLEX)
def test_view_as_real_and_complex_metadata(dtype):
    base = sample((4, 6), dtype)
    views = [lambda t: t, lambda t: t.t(), lambda t: t[1:, 2:], lambda t: t[:, ::2],
             lambda t: t[2], lambda t: t[1, 3]]
    for v in views:
        want, got = torch.view_as_real(v(base)), torch.view_as_real(v(base.to(D)))
        same_view(got, want)
        assert torch.equal(got.cpu(), want)
        assert got._base is not None
        back_w, back_g = torch.view_as_complex(want), torch.view_as_complex(got)
        same_view(back_g, back_w)
        assert torch.equal(back_g.cpu(), back_w)
    for f in (lambda t: t.real, lambda t: t.imag):
        for v in views:
            same_view(f(v(base.to(D))), f(v(base)))
            assert torch.equal(f(v(base.to(D))).cpu(), f(v(base)))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_view_as_complex_errors(dtype):
    r = torch.rand(4, 6, dtype=REAL_OF[dtype])
    for f in (lambda t: torch.view_as_complex(t), lambda t: torch.view_as_complex(t.t()),
              lambda t: torch.view_as_complex(t.view(4, 3, 2)[:, :, :1]),
              lambda t: torch.view_as_complex(t.reshape(-1)[1:-1].view(-1, 2)),
              lambda t: torch.view_as_complex(t.to(torch.int32).view(4, 3, 2)),
              lambda t: torch.view_as_real(t),
              lambda t: torch.view_as_real(torch.view_as_complex(t.view(4, 3, 2)).conj())):
        check(f, r)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_view_dtype(dtype):
    x = sample((3, 4), dtype)
    real = REAL_OF[dtype]
    check(lambda t: t.view(real), x)
    check(lambda t: t.view(torch.int32), x)
    check(lambda t: t.view(torch.uint8), x)
    check(lambda t: t.view(real).view(dtype), x)
    check(lambda t: t.view(torch.int16).view(dtype), x)
    check(lambda t: t.t().view(real), x)  # last dim not contiguous: CPU's error
    check(lambda t: t.view(real).t().view(dtype), x)
    other = torch.complex128 if dtype == torch.complex64 else torch.complex64
    check(lambda t: t.view(other), x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_writes_through_real_views_alias(dtype):
    xc = sample((3, 4), dtype)
    x = xc.to(D)
    r = torch.view_as_real(x)
    rc = torch.view_as_real(xc)
    for t, tr in ((x, r), (xc, rc)):
        tr[0, 1, 1] = 5.0  # imaginary part of t[0, 1]
        tr[..., 0].mul_(2)  # every real part
        t.imag[2].zero_()
        t.real[:, 3] += 1
        t[1, 0] = 3 - 3j
        t.view(REAL_OF[dtype])[:, :2] = -1
    assert torch.equal(x.cpu(), xc)
    assert torch.equal(r.cpu(), rc)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_reader_before_write_keeps_old_value(dtype):
    x = sample((2, 3), dtype).to(D)
    old = x * 1
    snapshot = x.clone()
    y = x.real * 2  # recorded before the write below
    torch.view_as_real(x).fill_(0)
    assert torch.equal(x.cpu(), torch.zeros(2, 3, dtype=dtype))
    assert torch.equal(old.cpu(), snapshot.cpu())
    assert torch.equal(y.cpu(), snapshot.real.cpu() * 2)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_real_storage_viewed_as_complex(dtype):
    real = REAL_OF[dtype]
    rc = torch.arange(24, dtype=real).reshape(3, 4, 2)
    r = rc.to(D)
    zc, z = torch.view_as_complex(rc), torch.view_as_complex(r)
    for t in (zc, z):
        t[1] *= 1j
        t.conj_physical_()
    assert torch.equal(r.cpu(), rc)
    assert torch.equal(z.cpu(), zc)


# --- the conjugate bit ---

@pytest.mark.parametrize("dtype", COMPLEX)
def test_conj_is_a_view_resolved_by_copies(dtype):
    xc = sample((3, 4), dtype)
    x = xc.to(D)
    c = x.conj()
    same_view(c, xc.conj())
    assert c.is_conj() and c._base is not None
    loom.reset_metrics()
    assert loom.metrics()["kernels_run"] == 0
    compare(c.resolve_conj(), xc.conj().resolve_conj())
    compare(c.clone(), xc.conj().clone())
    compare(c.t().contiguous(), xc.conj().t().contiguous())
    compare(c + 1, xc.conj() + 1)
    compare(c * c, xc.conj() * xc.conj())
    compare(c.sum(0), xc.conj().sum(0))
    compare(c.to(torch.complex128 if dtype == torch.complex64 else torch.complex64),
            xc.conj().to(torch.complex128 if dtype == torch.complex64 else torch.complex64))
    compare(c.to(REAL_OF[dtype]), xc.conj().to(REAL_OF[dtype]))
    assert torch.equal(c.cpu(), xc.conj())
    assert c[1, 2].item() == xc[1, 2].item().conjugate()
    # conj().imag carries the negative bit.
    same_view(c.imag, xc.conj().imag)
    compare(c.imag.resolve_neg(), xc.conj().imag.resolve_neg())
    compare(c.imag + 1, xc.conj().imag + 1)
    compare(c.real, xc.conj().real)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_writes_into_conj_views(dtype):
    xc, yc = sample((3, 4), dtype), sample((3, 4), dtype, seed=1)
    x, y = xc.to(D), yc.to(D)
    for t, u in ((x, y), (xc, yc)):
        t.conj().add_(1j)
        t.conj()[0] = u[0]
        t.conj().copy_(t.conj() * 2)
        t.conj().imag.mul_(3)
        t.conj()[2].copy_(u[2].conj())
        u.copy_(t.conj())
    assert torch.allclose(x.cpu(), xc) and torch.allclose(y.cpu(), yc)
    # A CPU conj view filled from Loom, and a Loom conj view filled from the CPU.
    dst = torch.zeros(3, 4, dtype=dtype).conj()
    dst.copy_(x)
    assert torch.equal(dst.resolve_conj(), xc)
    dst = torch.zeros(3, 4, dtype=dtype, device=D).conj()
    dst.copy_(xc)
    assert torch.equal(dst.cpu(), xc)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_conj_physical(dtype):
    x = sample((3, 4), dtype)
    check(lambda t: t.conj_physical(), x)
    check(lambda t: t.conj().conj_physical(), x)
    check(lambda t: t.clone().t().conj_physical_(), x)
    check(lambda t: torch.conj_physical(t, out=torch.empty(0, dtype=dtype, device=t.device)), x)
    check(lambda t: t.real.conj_physical(), x)


# --- indexing and shape ops ---

@pytest.mark.parametrize("dtype", COMPLEX)
def test_indexing(dtype):
    x = sample((4, 5), dtype)
    i = torch.tensor([0, 2, 2])
    m = x.real > 0
    loomed = {}

    def idx(t):
        return loomed.setdefault(t.device.type, i.to(t.device))

    def mask(t):
        return m.to(t.device)

    check(lambda t: t[idx(t)], x)
    check(lambda t: t[:, idx(t)], x)
    check(lambda t: t[mask(t)], x)
    check(lambda t: t.clone().index_put_((idx(t),), torch.tensor(5j, dtype=dtype,
                                                                 device=t.device)), x)
    check(lambda t: t.clone().index_put_((idx(t),), t[:3], accumulate=True), x)
    check(lambda t: t.masked_fill(mask(t), 1 + 1j), x)
    check(lambda t: t.masked_select(mask(t)), x)
    check(lambda t: (t * mask(t)).nonzero(), x)
    check(lambda t: t.take(idx(t)), x)
    check(lambda t: t.clone().put_(idx(t), t[0, :3], accumulate=True), x)
    check(lambda t: t.index_select(1, idx(t)), x)
    check(lambda t: t.gather(1, idx(t).expand(4, 3)), x)
    check(lambda t: t.scatter(1, idx(t)[:2].expand(4, 2), t[:, :2]), x)
    check(lambda t: t.scatter(1, idx(t)[:2].expand(4, 2), 1j), x)
    check(lambda t: t.scatter_add(1, idx(t).expand(4, 3), t[:, :3]), x)
    check(lambda t: t.scatter(1, idx(t).expand(4, 3), t[:, :3], reduce="multiply"), x)
    for r in ("sum", "prod", "mean", "amax"):
        check(lambda t: t.scatter_reduce(1, idx(t).expand(4, 3), t[:, :3], r), x)
    check(lambda t: t.index_add(1, idx(t), t[:, :3], alpha=2j), x)
    check(lambda t: t.index_copy(1, idx(t)[:2] + torch.tensor([0, 1], device=t.device),
                                 t[:, :2]), x)
    check(lambda t: t.index_fill(1, idx(t), 3j), x)
    check(lambda t: t.real.index_fill(1, idx(t), 3j), x)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_shape_ops(dtype):
    x = sample((4, 5), dtype)
    check(lambda t: t.flip(0), x)
    check(lambda t: t.roll(2, 1), x)
    check(lambda t: t.tril(), x)
    check(lambda t: t.clone().triu_(1), x)
    check(lambda t: t[0].diag(1), x)
    check(lambda t: t.diag(), x)
    check(lambda t: torch.cat([t, t.real]), x)
    check(lambda t: t.repeat(2, 1), x)
    check(lambda t: t.narrow_copy(1, 1, 3), x)
    check(lambda t: t.t().reshape(-1), x)
    check(lambda t: t.unfold(1, 2, 1), x)


# --- fusion and batched writes ---

def test_complex_chain_is_one_kernel():
    xc, yc = sample((1 << 12,), torch.complex64), sample((1 << 12,), torch.complex64, seed=1)
    x, y = xc.to(D), yc.to(D)
    loom.sync()
    loom.reset_metrics()
    r = ((x * y + 1j).exp() / (x.conj() + 2)).abs()
    rc = r.cpu()
    assert loom.metrics()["kernels_run"] == 1
    torch.testing.assert_close(rc, ((xc * yc + 1j).exp() / (xc.conj() + 2)).abs(),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_setitem_loop_is_one_kernel(dtype):
    t = torch.zeros(100, dtype=dtype, device=D)
    loom.sync()
    loom.reset_metrics()
    for i in range(100):
        t[i] = complex(i, -i)
    got = t.cpu()
    assert loom.metrics()["kernels_run"] == 1
    assert torch.equal(got, torch.tensor([complex(i, -i) for i in range(100)], dtype=dtype))


# --- complex32 (ComplexHalf): storage, transfers, views and casts ---

def test_complex32_storage_views_and_casts():
    xc = sample((3, 4), torch.complex64).to(torch.complex32)
    x = xc.to(D)
    assert x.dtype == torch.complex32
    assert torch.equal(torch.view_as_real(x.cpu()), torch.view_as_real(xc))
    same_view(torch.view_as_real(x), torch.view_as_real(xc))
    assert torch.equal(torch.view_as_real(x).cpu(), torch.view_as_real(xc))
    h = torch.rand(3, 2, dtype=torch.float16)
    same_view(torch.view_as_complex(h.to(D)), torch.view_as_complex(h))
    assert torch.equal(torch.view_as_real(torch.view_as_complex(h.to(D)).cpu()), h)
    check(lambda t: t.to(torch.complex64), xc)
    check(lambda t: t.to(torch.complex32), xc.to(torch.complex64))  # rounds each part to half
    check(lambda t: t * t, xc)
    check(lambda t: t.clone().fill_(1.5 - 2j), xc)
    assert torch.tensor(2 + 3j, dtype=torch.complex32, device=D).item() == 2 + 3j
    n = torch.randn(4000, dtype=torch.complex32, device=D).cpu()
    assert n.dtype == torch.complex32 and abs(n.to(torch.complex64).real.var().item() - 0.5) < 0.06


CONJ_PRODUCTS = {
    "mm_conj_b": lambda a, b, c: torch.mm(a, b.conj()),
    "mm_conj_a": lambda a, b, c: torch.mm(a.conj(), b),
    "matmul_conj_t": lambda a, b, c: a @ a.t().conj(),
    "bmm": lambda a, b, c: torch.bmm(a[None], b[None].conj()),
    "addmm": lambda a, b, c: torch.addmm(c.conj(), a.conj(), b.conj(), beta=2),
    "addmm_": lambda a, b, c: c.clone().addmm_(a, b.conj()),
    "baddbmm": lambda a, b, c: torch.baddbmm(c[None].conj(), a[None], b[None].conj()),
    "mm_out": lambda a, b, c: torch.mm(a, b.conj(), out=torch.empty(3, 2, dtype=a.dtype, device=a.device)),
    "cov": lambda a, b, c: torch.cov(a),
    "corrcoef": lambda a, b, c: torch.corrcoef(a),
    "matmul_3d": lambda a, b, c: a[None].expand(2, 3, 4) @ b.conj(),
}


@pytest.mark.parametrize("name", list(CONJ_PRODUCTS))
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_products_of_conjugate_views(name, dtype):
    # mm, bmm, addmm and baddbmm get a conjugate view's bit unresolved (PyTorch lets them
    # through its Conjugate key): Loom conjugates as it reads (cov of a complex vector came
    # out complex before).
    g = torch.Generator().manual_seed(3)
    a, b, c = (torch.randn(s, dtype=dtype, generator=g) for s in [(3, 4), (4, 2), (3, 2)])
    want = CONJ_PRODUCTS[name](a, b, c)
    got = CONJ_PRODUCTS[name](a.to(loom.device), b.to(loom.device), c.to(loom.device))
    torch.testing.assert_close(got.cpu(), want)
