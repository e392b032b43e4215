"""Elementwise ops on Loom vs CPU torch: values, dtype, shape and strides, over dtypes and
layouts. Where CPU raises, Loom must raise the same exception type.

Inputs stay inside each op's domain where CPU's result is implementation-specific:
float -> int casts use in-range values only (out-of-range conversion is undefined in C).
"""
import pytest
import torch

import loom
from cpu_errors import raises_like_cpu
from kernel_text import kernel_sources

D = loom.device
ALL = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int16,
       torch.int32, torch.int64, torch.uint8, torch.bool]
FLOATS = ALL[:4]
TOL = {torch.float16: dict(rtol=2e-3, atol=2e-3), torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2)}


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def sample(shape, dtype, lo=-4.0, hi=4.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
    if dtype == torch.bool:
        return x > (lo + hi) / 2
    if not dtype.is_floating_point:
        x = x.round()
        if dtype == torch.uint8:
            x = x.abs()
    return x.to(dtype)


REDUCED = (torch.float16, torch.bfloat16)


def check(fn, *args, tol=None):
    """Runs fn on CPU args and on their Loom copies; compares results or exceptions.

    CPU 1.13 lacks many half kernels that CUDA has; Loom computes them, so a CPU "not
    implemented for 'Half'" is compared against the float32 result rounded to the dtype.
    """
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001
        reduced = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.dtype in REDUCED]
        want = None
        if "not implemented for 'Half'" in str(e) or "not implemented for 'BFloat16'" in str(e):
            try:
                want = fn(*[a.float() if isinstance(a, torch.Tensor) and a.dtype in REDUCED
                            else a for a in args])
                if want.dtype == torch.float32:
                    want = want.to(reduced[0])
            except Exception:  # noqa: BLE001
                pass  # not a half-only gap: the op rejects the kind of dtype
        if want is None:
            try:
                fn(*[to_loom(a) for a in args])
            except type(e):
                return None
            pytest.xfail(f"Loom accepts what CPU rejects: {e}")
    got = fn(*[to_loom(a) for a in args])
    compare(got, want, tol)
    return got


def to_loom(a):
    # CPU 0-dim tensors marked with `cpu_scalar` stay on the CPU as operands
    if isinstance(a, torch.Tensor) and not getattr(a, "_keep_cpu", False):
        return a.to(D)
    return a


def compare(got, want, tol=None):
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            compare(g, w, tol)
        return
    assert got.device.type == D.type
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    kw = tol if tol is not None else TOL.get(want.dtype, {})
    torch.testing.assert_close(got.cpu(), want, equal_nan=True, **kw)


# --- unary ---

UNARY = ["abs", "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
         "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
         "sigmoid", "relu", "erf", "floor", "ceil", "round", "trunc", "frac", "sign",
         "reciprocal", "isnan", "isinf", "isfinite", "logical_not", "bitwise_not"]
DOMAIN = {"log": (0.1, 4), "log2": (0.1, 4), "log10": (0.1, 4), "log1p": (-0.9, 4),
          "sqrt": (0, 4), "rsqrt": (0.1, 4), "asin": (-1, 1), "acos": (-1, 1),
          "reciprocal": (0.25, 4), "tan": (-1.5, 1.5)}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", UNARY)
def test_unary(op, dtype):
    lo, hi = DOMAIN.get(op, (-4, 4))
    x = sample((5, 7), dtype, lo, hi)
    if dtype.is_floating_point and op in ("isnan", "isinf", "isfinite", "abs", "sign", "relu"):
        x[0, :3] = torch.tensor([float("nan"), float("inf"), -float("inf")]).to(dtype)
    check(getattr(torch, op), x)


LAYOUTS = ["contiguous", "transposed", "stepped", "expanded", "zero_dim", "zero_size"]


def layout(x, kind):
    if kind == "transposed":
        return x.t()
    if kind == "stepped":
        return x[::2, 1::3]
    if kind == "expanded":
        return x[:1].expand(4, x.shape[1])
    if kind == "zero_dim":
        return x[1, 2]
    if kind == "zero_size":
        return x[:, :0]
    return x


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("op", ["exp", "neg", "abs", "isnan", "floor", "sigmoid"])
def test_unary_layouts(op, kind):
    x = sample((6, 8), torch.float32)
    got = getattr(torch, op)(layout(x.to(D), kind))
    compare(got, getattr(torch, op)(layout(x, kind)))


@pytest.mark.parametrize("op", ["exp", "neg", "abs", "floor", "sqrt", "sigmoid", "relu"])
def test_unary_inplace_and_out(op):
    x = sample((6, 8), torch.float32, 0.1, 4)
    base_l, base_c = x.to(D), x.clone()
    getattr(base_l[::2, 1:], op + "_")()
    getattr(base_c[::2, 1:], op + "_")()
    compare(base_l, base_c)
    if op == "relu":
        return
    out_l, out_c = torch.empty(0, device=D), torch.empty(0)
    getattr(torch, op)(x.to(D), out=out_l)
    getattr(torch, op)(x, out=out_c)
    compare(out_l, out_c)


# --- binary ---

BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2),
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=3),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "floor_divide": torch.floor_divide,
    "pow": torch.pow, "remainder": torch.remainder, "fmod": torch.fmod,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
    "ge": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor, "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift,
}
NONZERO_B = {"div", "div_trunc", "div_floor", "floor_divide", "remainder", "fmod"}


def binary_inputs(op, dtype):
    a = sample((5, 6), dtype, seed=1)
    if op == "pow":
        a = sample((5, 6), dtype, 0, 3, seed=1)
        b = sample((5, 6), dtype, 0, 3, seed=2)
    elif op in ("bitwise_left_shift", "bitwise_right_shift"):
        b = sample((5, 6), dtype, 0, 3, seed=2)
        if dtype != torch.bool:
            a = sample((5, 6), dtype, 0, 15, seed=1)
    elif op in NONZERO_B and dtype != torch.bool:
        b = sample((5, 6), dtype, 1, 4, seed=2)
        b = torch.where(torch.arange(30).reshape(5, 6) % 2 == 0, b, -b) if dtype != torch.uint8 else b
    else:
        b = sample((5, 6), dtype, seed=2)
    return a, b


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", BINARY)
def test_binary(op, dtype):
    a, b = binary_inputs(op, dtype)
    if dtype.is_floating_point and op not in ("pow",):
        a[0, 0], b[0, 1] = float("nan"), float("nan")
    check(BINARY[op], a, b)


@pytest.mark.parametrize("op", ["add", "mul", "div", "lt", "maximum", "pow", "add_alpha"])
@pytest.mark.parametrize("pair", [(torch.float32, torch.int64), (torch.int32, torch.float16),
                                  (torch.uint8, torch.int8), (torch.bool, torch.int16),
                                  (torch.float64, torch.bfloat16), (torch.bool, torch.float32)])
def test_binary_promotion(op, pair):
    a = sample((4, 5), pair[0], 0, 3, seed=3)
    b = sample((4, 5), pair[1], 0.5, 3, seed=4)
    check(BINARY[op], a, b)


@pytest.mark.parametrize("kind", ["transposed", "stepped", "broadcast_row", "broadcast_col",
                                  "expanded", "zero_dim", "zero_size", "cpu_scalar",
                                  "both_zero_dim"])
@pytest.mark.parametrize("op", ["add", "mul", "div", "lt", "remainder", "atan2"])
def test_binary_layouts(op, kind):
    a = sample((6, 9), torch.float32, seed=5)
    b = sample((6, 9), torch.float32, 0.5, 3, seed=6)
    fn = BINARY[op]
    if kind == "transposed":
        a, b = a.t(), b.t()[:, :]
    elif kind == "stepped":
        a, b = a[::2, ::3], b[1::2, ::3]
    elif kind == "broadcast_row":
        b = b[:1]
    elif kind == "broadcast_col":
        a, b = a[:, :1], b[:1, :]
    elif kind == "expanded":
        b = b[:, :1].expand(6, 9)
    elif kind == "zero_dim":
        b = b[0, 0].clone()
    elif kind == "zero_size":
        a, b = a[:0], b[:0]
    elif kind == "both_zero_dim":
        a, b = a[0, 0].clone(), b[0, 0].clone()
    elif kind == "cpu_scalar":
        b = torch.tensor(2.5)
        b._keep_cpu = True
        compare(fn(a.to(D), b), fn(a, b))
        return
    check(fn, a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16, torch.uint8, torch.bool])
@pytest.mark.parametrize("expr", ["x + 2", "2.5 * x", "x - 1", "x / 2", "x * True", "x // 2",
                                  "x ** 2", "2 ** x", "x % 3", "x < 1.5", "x == 2", "-x + 1",
                                  "x & 1", "x | 2"])
def test_python_scalars(expr, dtype):
    x = sample((3, 4), dtype, 0, 4, seed=7)
    check(lambda x: eval(expr, {"x": x}), x)


def test_cpu_tensor_operand_rejected():
    a = torch.ones(3, device=D)
    with pytest.raises(RuntimeError):
        a + torch.ones(3)


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "remainder_", "pow_",
                                "maximum", "bitwise_and_", "lt_", "clamp_"])
def test_inplace_on_view(op):
    dtype = torch.int32 if op == "bitwise_and_" else torch.float32
    base_c = sample((6, 8), dtype, 1, 4, seed=8)
    y_c = sample((3, 4), dtype, 1, 4, seed=9)
    base_l, y_l = base_c.to(D), y_c.to(D)
    if op == "maximum":
        return  # no in-place form
    for base, y in [(base_l, y_l), (base_c, y_c)]:
        v = base[::2, 2:6]
        if op == "clamp_":
            v.clamp_(min=torch.full_like(y, 1.5), max=y)
        else:
            getattr(v, op)(y)
    compare(base_l, base_c)


def test_inplace_add_alpha_and_alias():
    x_c = sample((4, 4), torch.float32, seed=10)
    x_l = x_c.to(D)
    for x in (x_c, x_l):
        x[1:].add_(x[:1], alpha=0.5)  # reads a row of the storage it writes
    compare(x_l, x_c)


def test_inplace_promotion_error():
    x = torch.ones(3, dtype=torch.int64, device=D)
    with pytest.raises(RuntimeError):
        x.add_(torch.ones(3, device=D))  # float result cannot be cast to int64 in place


@pytest.mark.parametrize("op", ["add", "mul", "div", "lt", "maximum", "atan2", "bitwise_or"])
def test_binary_out(op):
    dtype = torch.int64 if op == "bitwise_or" else torch.float32
    a, b = sample((4, 5), dtype, seed=11), sample((4, 5), dtype, 1, 3, seed=12)
    outs = {}
    for dev in ("cpu", D):
        out = torch.empty(0, dtype=torch.bool if op == "lt" else dtype, device=dev)
        getattr(torch, op)(a.to(dev), b.to(dev), out=out)
        outs[dev] = out
        strided = torch.zeros(5, 4, dtype=out.dtype, device=dev).t()
        getattr(torch, op)(a.to(dev), b.to(dev), out=strided)
        outs[(dev, "t")] = strided
    compare(outs[D], outs["cpu"])
    compare(outs[(D, "t")], outs[("cpu", "t")])


def test_div_mode_out_and_inplace():
    a, b = sample((4, 5), torch.float32, seed=13), sample((4, 5), torch.float32, 1, 3, seed=14)
    for mode in ("trunc", "floor"):
        o_c, o_l = torch.empty(4, 5), torch.empty(4, 5, device=D)
        torch.div(a, b, rounding_mode=mode, out=o_c)
        torch.div(a.to(D), b.to(D), rounding_mode=mode, out=o_l)
        compare(o_l, o_c)
        x_c, x_l = a.clone(), a.to(D)
        x_c.div_(b, rounding_mode=mode)
        x_l.div_(b.to(D), rounding_mode=mode)
        compare(x_l, x_c)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_div_modes_round_as_cpu_vector_loop(dtype):
    # NOTE [Reduced rounding divisions]: the quotient (and each step of floor's formula)
    # rounds to the type. Sizes are multiples of the CPU's vector width, whose scalar tail
    # computes differently.
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(64, 512, generator=g) * 100).to(dtype)
    b = (torch.randn(64, 512, generator=g) * 2).to(dtype)
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 3.5, -3.5, float("inf"), float("-inf"),
                            float("nan"), 1e-3, 0.1, -0.1, 250.0, 1000.0, -7.0, 2.0])
    pairs = [(a, b), (special[:, None].expand(16, 16).to(dtype).contiguous(),
                      special[None, :].expand(16, 16).to(dtype).contiguous())]
    for x, y in pairs:
        for mode in ("trunc", "floor"):
            want = torch.div(x, y, rounding_mode=mode)
            got = torch.div(x.to(D), y.to(D), rounding_mode=mode).cpu()
            assert torch.equal(got.isnan(), want.isnan())
            keep = ~want.isnan()
            assert torch.equal(got[keep], want[keep])
            assert torch.equal(got[keep].signbit(), want[keep].signbit())


def test_scalar_base_forms():
    # pow(Scalar, Tensor, out=) and remainder(Scalar, Tensor): the scalar a wrapped number.
    x = sample((4, 5), torch.float32, seed=21)
    for base in (2, 2.5, -3):
        for dt in (torch.float32, torch.float64):
            want = torch.pow(base, x, out=torch.empty(0, dtype=dt))
            got = torch.pow(base, x.to(D), out=torch.empty(0, dtype=dt, device=D))
            compare(got, want)
        compare(torch.remainder(base, x.to(D)), torch.remainder(base, x))
    i = torch.arange(1, 9).reshape(2, 4)
    compare(torch.remainder(7, i.to(D)), torch.remainder(7, i))
    compare(torch.pow(3, i.to(D), out=torch.empty(0, dtype=torch.int64, device=D)),
            torch.pow(3, i, out=torch.empty(0, dtype=torch.int64)))
    data = torch.randn(6, device=D)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.pow(2, data[1:4], out=data[0:3])


def test_ternary_out_forms():
    a, b = sample((4, 5), torch.float32, seed=22), sample((1, 5), torch.float32, seed=23)
    w, c = sample((4, 1), torch.float32, seed=24), sample((4, 5), torch.float32, 1, 3, seed=25)
    cases = [lambda o, t: torch.lerp(t(a), t(b), 0.3, out=o),
             lambda o, t: torch.lerp(t(a), t(b), t(w), out=o),
             lambda o, t: torch.addcmul(t(a), t(b), t(c), value=0.5, out=o),
             lambda o, t: torch.addcdiv(t(a), t(b), t(c), value=-2, out=o)]
    for fn in cases:
        # An empty out (resized), and a right-sized transposed one (its strides kept).
        for make_out in (lambda d: torch.empty(0, device=d), lambda d: torch.empty(5, 4, device=d).t()):
            want = fn(make_out("cpu"), lambda v: v)
            got_out = make_out(D)
            got = fn(got_out, lambda v: v.to(D))
            assert got is got_out
            compare(got, want)
        # A column of a bigger tensor: written in place, strides kept.
        want_base, got_base = torch.zeros(4, 5, 2), torch.zeros(4, 5, 2, device=D)
        fn(want_base[..., 1], lambda v: v)
        fn(got_base[..., 1], lambda v: v.to(D))
        compare(got_base, want_base)
        with pytest.raises(RuntimeError) as want_err:
            fn(torch.empty(0, dtype=torch.int64), lambda v: v)
        with pytest.raises(RuntimeError) as got_err:
            fn(torch.empty(0, dtype=torch.int64, device=D), lambda v: v.to(D))
        assert str(got_err.value) == str(want_err.value)


# --- ternary ---

@pytest.mark.parametrize("dtype", ALL)
def test_where(dtype):
    c = sample((4, 5), torch.bool, seed=15)
    a, b = sample((4, 5), dtype, seed=16), sample((1, 5), dtype, seed=17)
    check(torch.where, c, a, b)
    check(lambda c, a: torch.where(c, a, 0), c, a)


def test_where_promotion_and_scalar():
    c = sample((4, 5), torch.bool, seed=18)
    check(torch.where, c, sample((4, 5), torch.int32), sample((4, 5), torch.float64))
    check(lambda c, a: torch.where(c, a, 2.5), c, sample((4, 5), torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64,
                                   torch.int8, torch.uint8, torch.bool])
def test_clamp(dtype):
    x = sample((5, 6), dtype, -4, 4, seed=19)
    if dtype.is_floating_point:
        x[0, 0] = float("nan")
    check(lambda x: torch.clamp(x, -1, 2), x)
    check(lambda x: torch.clamp(x, min=1), x)
    check(lambda x: torch.clamp(x, max=0.5), x)
    check(lambda x: x.clamp(-1.5, 2.5), x)
    lo, hi = sample((1, 6), dtype, -3, 0, seed=20), sample((5, 1), dtype, 0, 3, seed=21)
    check(torch.clamp, x, lo, hi)
    check(lambda x, lo: torch.clamp(x, min=lo), x, lo)


def test_clamp_inplace_and_out():
    x = sample((5, 6), torch.float32, seed=22)
    xl, xc = x.to(D), x.clone()
    xl[1:].clamp_(-1, 1)
    xc[1:].clamp_(-1, 1)
    compare(xl, xc)
    ol, oc = torch.empty(0, device=D), torch.empty(0)
    torch.clamp(x.to(D), max=0.5, out=ol)
    torch.clamp(x, max=0.5, out=oc)
    compare(ol, oc)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp(dtype):
    a, b = sample((4, 5), dtype, seed=23), sample((4, 5), dtype, seed=24)
    w = sample((4, 5), dtype, -0.5, 1.5, seed=25)
    check(torch.lerp, a, b, w)
    check(lambda a, b: torch.lerp(a, b, 0.3), a, b)
    check(lambda a, b: torch.lerp(a, b, 0.8), a, b)
    if dtype == torch.float16:
        return  # no CPU half lerp_ to compare with
    al, ac = a.to(D), a.clone()
    al.lerp_(b.to(D), 0.25)
    ac.lerp_(b, 0.25)
    compare(al, ac)


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.bool], ids=str)
def test_lerp_of_integers_raises_as_cpu(dtype):
    a, b = torch.arange(6).to(dtype), (torch.arange(6) * 2).to(dtype)
    w = torch.full((6,), 1).to(dtype)
    for fn in (lambda x, y: torch.lerp(x, y, 0.5), lambda x, y: torch.lerp(x, y, w.to(x.device)),
               lambda x, y: x.clone().lerp_(y, 0.5),
               lambda x, y: torch.lerp(x, y, 0.5, out=torch.empty_like(x))):
        raises_like_cpu(lambda: fn(a, b), lambda: fn(a.to(D), b.to(D)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64])
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addc(op, dtype):
    x, t1 = sample((4, 5), dtype, seed=26), sample((4, 5), dtype, seed=27)
    t2 = sample((1, 5), dtype, 1, 3, seed=28)
    fn = getattr(torch, op)
    check(lambda x, t1, t2: fn(x, t1, t2, value=2), x, t1, t2)
    check(fn, x, t1, t2)
    if dtype in (torch.float32, torch.float64):
        xl, xc = x.to(D), x.clone()
        getattr(xl, op + "_")(t1.to(D), t2.to(D), value=0.5)
        getattr(xc, op + "_")(t1, t2, value=0.5)
        compare(xl, xc)


# --- casts ---

def cast_source(src, dst):
    if src == torch.bool:
        return sample((4, 6), src)
    lo, hi = -100, 100
    if torch.uint8 in (src, dst):
        lo = 0
        hi = 200 if src == torch.uint8 or dst == torch.uint8 and src != torch.int8 else 100
    if torch.int8 in (src, dst):
        hi = min(hi, 120)
    x = sample((4, 6), torch.float64, lo, hi, seed=29)
    x[0, :4] = torch.tensor([0.0, 0.5, -0.5, 1.75 if lo == 0 else -1.75])
    x = x.to(src)
    if src.is_floating_point and dst == torch.bool:
        x[1, 0] = float("nan")
    return x


@pytest.mark.parametrize("dst", ALL)
@pytest.mark.parametrize("src", ALL)
def test_cast(src, dst):
    x = cast_source(src, dst)
    check(lambda x: x.to(dst), x, tol=dict(rtol=0, atol=0))
    check(lambda x: x.t().to(dst), x, tol=dict(rtol=0, atol=0))


def test_copy_into_view_casts():
    x = sample((4, 6), torch.float32, seed=30)
    bl, bc = torch.zeros(6, 6, dtype=torch.float16, device=D), torch.zeros(6, 6, dtype=torch.float16)
    bl[1:5].copy_(x.to(D))
    bc[1:5].copy_(x)
    compare(bl, bc)


# --- fusion ---

def test_fusion_one_kernel():
    xc = torch.rand(1 << 20)
    x = xc.to(D)
    x.cpu()
    loom.reset_metrics()
    y = ((x * 2 + 1).exp() - 3).abs() * 0.5
    yc = y.cpu()
    assert loom.metrics()["kernels_run"] == 1
    torch.testing.assert_close(yc, ((xc * 2 + 1).exp() - 3).abs() * 0.5)


def test_fusion_budget_counts_ops():
    # 8 chains of 14 multiply-adds, summed: 231 ops under fusion's 256 (kMaxFusedNodes).
    # The reindex around each inlined producer used to count too: 8 chains of 8 split.
    def program(x):
        total = None
        for c in range(8):
            y = x
            for d in range(14):
                y = y * (0.999 - 1e-4 * c) + 1e-3 * (d + 1)
            total = y if total is None else total + y
        return total

    xc = torch.rand(4096)
    x = xc.to(D)
    x.cpu()
    loom.reset_metrics()
    yc = program(x).cpu()
    assert loom.metrics()["kernels_run"] == 1
    torch.testing.assert_close(yc, program(xc))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_rsub(dtype):
    # other - alpha * self, with sub's promotion and its error for bool
    a, b = sample((3, 4), dtype), sample((4,), dtype, seed=1)
    check(lambda x, y: torch.rsub(x, y), a, b)
    if dtype != torch.bool:
        check(lambda x, y: torch.rsub(x, y, alpha=2), a.t(), b[:3])
        check(lambda x: 5 - x, a)
        check(lambda x: torch.rsub(x, 3, alpha=2), a)


def test_unsupported_dtype_messages_name_the_cpu_kernel():
    # The CPU's message names its kernel ("abs_cpu", "floor_vml_cpu", ...); Loom's does too.
    b, f = torch.tensor([True, False]), torch.tensor([1.5, 2.0])
    cases = [lambda t, u: torch.div(t, t, rounding_mode="floor"), lambda t, u: torch.div(t, t, rounding_mode="trunc"),
             lambda t, u: torch.remainder(t, t), lambda t, u: torch.fmod(t, t), lambda t, u: torch.abs(t),
             lambda t, u: torch.floor(t), lambda t, u: torch.ceil(t), lambda t, u: torch.round(t),
             lambda t, u: torch.trunc(t), lambda t, u: torch.frac(t), lambda t, u: t << t, lambda t, u: t >> t,
             lambda t, u: u & u, lambda t, u: u | u, lambda t, u: u ^ u, lambda t, u: torch.bitwise_not(u),
             lambda t, u: torch.pow(t, t)]
    for fn in cases:
        raises_like_cpu(lambda: fn(b, f), lambda: fn(b.to(loom.device), f.to(loom.device)))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8])
def test_python_shift_operators(dtype):
    # << and >> (aten::__lshift__ / __rshift__ and their in-place forms) run on Loom.
    loom.reset_metrics()
    a = torch.tensor([1, 3, 7, 100], dtype=dtype)
    s = torch.tensor([0, 1, 2, 3], dtype=dtype)
    for fn in (lambda x, y: x << y, lambda x, y: x >> y, lambda x, y: x << 2, lambda x, y: x >> 1):
        assert torch.equal(fn(a.to(loom.device), s.to(loom.device)).cpu(), fn(a, s))
    x = a.to(loom.device)
    x <<= 1
    x >>= torch.tensor(1, dtype=dtype, device=loom.device)
    assert torch.equal(x.cpu(), (a << 1) >> 1)
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("e", [0, 1, 2, 3, -2, 0.5, -0.5, -1, 2.0, 3.0])
def test_pow_scalar_shortcuts_are_the_cpus(dtype, e):
    """The CPU computes x ** 2, 3, -2, 0.5, -0.5 and -1 as products, sqrt and reciprocals
    (float16: pow throughout); Loom's bits are the CPU's, signed zeros and infinities
    included ((-0.0) ** -0.5 is rsqrt's -inf). bfloat16's rsqrt rounds its square root
    first on the CPU, once on Loom: within one bfloat16 step there."""
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(2000, generator=g, dtype=torch.float64) * 4).to(dtype)
    x[:6] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30]).to(dtype)
    want = x ** e
    got = (x.to(loom.device) ** e).cpu()
    assert got.dtype == want.dtype
    assert torch.equal(got.isnan(), want.isnan())
    keep = ~want.isnan()
    if dtype == torch.bfloat16 and e == -0.5:
        torch.testing.assert_close(got[keep], want[keep])
    else:
        assert torch.equal(got[keep], want[keep])
    assert torch.equal(got[keep].signbit(), want[keep].signbit())


def _integer_pairs(dtype, n=1 << 16, seed=0):
    """Dividends and divisors of every magnitude of `dtype`, its extremes, -1 and 1, and
    small values with exact quotients (NOTE [Integer division] in ops_c.cpp)."""
    g = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    bits = info.bits
    raw = torch.randint(-2 ** 62, 2 ** 62, (2, n), generator=g, dtype=torch.int64)
    shift = torch.randint(0, bits, (2, n), generator=g, dtype=torch.int64)
    wide = raw >> (62 - bits + 1 + shift).clamp(min=0, max=62)
    small = torch.randint(-1000, 1001, (2, n), generator=g, dtype=torch.int64)
    edges = torch.tensor([info.min, info.max, info.min + 1, info.max - 1, -1, 1, 2, -2, 3, 7,
                          -7, 2 ** 53 if bits == 64 else 0, 2 ** 53 + 1 if bits == 64 else 0],
                         dtype=torch.int64)
    ea, eb = torch.meshgrid(edges, edges, indexing="ij")
    a = torch.cat([wide[0], small[0], ea.flatten()])
    b = torch.cat([wide[1], small[1], eb.flatten()])
    if dtype == torch.uint8:
        a, b = a.abs(), b.abs()
    a, b = a.clamp(info.min, info.max).to(dtype), b.clamp(info.min, info.max).to(dtype)
    b = torch.where(b == 0, torch.ones_like(b), b)
    # The CPU's own division traps on the minimum by -1 (the process dies of SIGFPE); Loom
    # wraps it, as x86 would without the trap. Not compared.
    if dtype != torch.uint8:
        b = torch.where((a == info.min) & (b == -1), torch.ones_like(b), b)
    return a, b


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
def test_integer_division_exact(dtype):
    """Floor and truncating division, remainder and fmod equal the CPU's everywhere,
    extremes included."""
    a, b = _integer_pairs(dtype)
    al, bl = a.to(D), b.to(D)
    for name, fn in [("floor", lambda x, y: torch.div(x, y, rounding_mode="floor")),
                     ("trunc", lambda x, y: torch.div(x, y, rounding_mode="trunc")),
                     ("remainder", torch.remainder), ("fmod", torch.fmod)]:
        got, want = fn(al, bl).cpu(), fn(a, b)
        bad = (got != want).nonzero().flatten()[:3].tolist()
        assert not bad, (name, [(a[i].item(), b[i].item(), got[i].item(), want[i].item())
                                for i in bad])


def test_deferred_checks_fault_late_and_leave_input(tmp_path):
    """A zero divisor at the end of a long tensor still raises (NOTE [Deferred checks]: the
    vectorized run only records it, the strict rerun reports it), the in-place dividend
    keeps its values, and the same kernel without a zero runs once, in its fast form."""
    from kernel_text import kernel_sources
    a = torch.randint(-10 ** 12, 10 ** 12, (1 << 20,))
    b = torch.randint(1, 10 ** 6, (1 << 20,))
    b[-3] = 0
    al, bl = a.to(D), b.to(D)
    raises_like_cpu(lambda: a.clone().remainder_(b), lambda: al.remainder_(bl).cpu())
    assert torch.equal(al.cpu(), a)
    b[-3] = 5
    al.remainder_(b.to(D))
    assert torch.equal(al.cpu(), a.remainder(b))
    prog = ("import torch, loom\n"
            "a = torch.randint(-99, 99, (4096,)); b = torch.randint(1, 9, (4096,))\n"
            "assert torch.equal((a.to(loom.device) // b.to(loom.device)).cpu(), a // b)\n")
    src = "void kernel".join(kernel_sources(prog, tmp_path))
    assert "if (loom_body(bufs, start, end, 0)) loom_body(bufs, start, end, 1);" in src


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_integer_division_by_a_power_of_two_shifts(dtype, tmp_path):
    """Floor division and remainder by a constant power of two are a shift and a mask
    (NOTE [Integer division]): the CPU's values for negative dividends and the type's
    extremes, and the kernel has no division helper."""
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(4)
    x = torch.randint(info.min, info.max, (5000,), generator=g, dtype=torch.int64).to(dtype)
    x[:4] = torch.tensor([info.min, info.max, -1 if info.min < 0 else 0, 0]).to(dtype)
    xl = x.to(loom.device)
    for c in (1, 2, 8, 64):
        assert torch.equal((xl // c).cpu(), x // c)
        assert torch.equal((xl % c).cpu(), x % c)
        assert torch.equal(torch.div(xl, c, rounding_mode="floor").cpu(),
                           torch.div(x, c, rounding_mode="floor"))
    if dtype == torch.int64:
        prog = ("import torch, loom\n"
                "x = torch.arange(-50, 50).to(loom.device)\n"
                "assert torch.equal((x // 4 + x % 8).cpu(), torch.arange(-50, 50) // 4 +"
                " torch.arange(-50, 50) % 8)\n")
        body = "void kernel".join(kernel_sources(prog, tmp_path)).split("void kernel", 1)[-1]
        assert ">> 2" in body and "& 7LL" in body and "loom_fdiv" not in body and "loom_rem" not in body
