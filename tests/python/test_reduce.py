"""Reductions and scans on Loom against CPU torch: values, dtypes, shapes, errors, kernels."""
import os

import pytest
import torch

import loom
from kernel_text import kernel_sources

ALL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
              torch.int32, torch.int64, torch.uint8, torch.bool]
FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# (name, view of a (4, 6) base) — every view is taken the same way on both devices.
LAYOUTS = [
    ("contiguous", lambda t: t),
    ("transposed", lambda t: t.t()),
    ("stepped", lambda t: t[:, ::2]),
    ("expanded", lambda t: t[:1].expand(4, 6)),
    ("zero_dim", lambda t: t[1, 2]),
    ("zero_rows", lambda t: t[:0]),
    ("zero_cols", lambda t: t[:, :0]),
]


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    """Every op here must run on Loom: a fallback raises, and none may be counted."""
    monkeypatch.setenv("LOOM_FALLBACK", "error")
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def make(dtype, shape=(4, 6), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    lo = 0 if dtype == torch.uint8 else -4
    return torch.randint(lo, 5, shape, generator=g).to(dtype)


def _call(fn, x):
    try:
        return fn(x), None
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return None, e


def _compare(got, want, atol=None, rtol=None):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w, atol, rtol)
        return
    assert got.device == loom.device
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    torch.testing.assert_close(got.cpu(), want, atol=atol, rtol=rtol, equal_nan=True)


HALVES = (torch.float16, torch.bfloat16)


def _halve(r, dtype):
    if isinstance(r, tuple):
        return tuple(_halve(t, dtype) for t in r)
    return r.to(dtype) if r.dtype == torch.float32 else r


def check(fn, x, atol=None, rtol=None):
    """fn on a CPU tensor and on its Loom copy agree, or raise the same exception type."""
    want, want_err = _call(fn, x)
    got, got_err = _call(fn, x.to(loom.device))
    if want_err is not None and "not implemented for" in str(want_err) and x.dtype in HALVES:
        # The CPU lacks this kernel for half types: the reference runs in float32.
        want = _halve(fn(x.float()), x.dtype)
        want_err = None
    if want_err is not None:
        assert got_err is not None, f"CPU raised {want_err!r}, Loom did not"
        assert type(got_err) is type(want_err), f"{got_err!r} vs CPU {want_err!r}"
        return
    assert got_err is None, f"Loom raised {got_err!r}, CPU gave a result"
    _compare(got, want, atol, rtol)


def tol(dtype):
    # Accumulation order differs from eager's cascade sums.
    if dtype == torch.float16:
        return dict(atol=1e-2, rtol=1e-2)
    if dtype == torch.bfloat16:
        return dict(atol=5e-2, rtol=2e-2)
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else {}


# --- every op, every dtype, contiguous ---

SUM_LIKE = {
    "sum_all": lambda t: t.sum(),
    "sum_dim": lambda t: t.sum(1),
    "sum_dims_keep": lambda t: t.sum((0, 1), keepdim=True),
    "sum_empty_list": lambda t: torch.sum(t, []),
    "sum_neg": lambda t: t.sum(-1, keepdim=True),
    "prod_all": lambda t: t.prod(),
    "prod_dim": lambda t: t.prod(0),
    "prod_neg_keep": lambda t: t.prod(-1, keepdim=True),
    "amax": lambda t: t.amax(1),
    "amin_multi": lambda t: t.amin((0, 1)),
    "amax_keep": lambda t: t.amax(-2, keepdim=True),
    "max_all": lambda t: t.max(),
    "min_all": lambda t: t.min(),
    "max_dim": lambda t: tuple(t.max(1)),
    "min_dim_keep": lambda t: tuple(t.min(0, keepdim=True)),
    "argmax_all": lambda t: t.argmax(),
    "argmin_dim": lambda t: t.argmin(1),
    "argmax_keep": lambda t: t.argmax(-1, keepdim=True),
    "all": lambda t: t.all(),
    "any": lambda t: t.any(),
    "all_dim": lambda t: t.all(1),
    "any_dim_keep": lambda t: t.any(0, keepdim=True),
    "cumsum": lambda t: t.cumsum(1),
    "cumsum_neg": lambda t: t.cumsum(-2),
    "cumprod": lambda t: t.cumprod(0),
    "mean_all": lambda t: t.mean(),
    "mean_dim": lambda t: t.mean(1),
    "mean_multi_keep": lambda t: t.mean((0, -1), keepdim=True),
    "var": lambda t: t.var(),
    "var_dim": lambda t: t.var(1),
    "std_dim_keep": lambda t: t.std(0, keepdim=True),
    "var_corr0": lambda t: torch.var(t, 1, correction=0),
    "var_mean": lambda t: torch.var_mean(t, 1),
    "std_mean": lambda t: torch.std_mean(t, (0, 1), correction=0),
    "logsumexp": lambda t: torch.logsumexp(t, 1),
    "logsumexp_multi_keep": lambda t: torch.logsumexp(t, (0, 1), keepdim=True),
    "vector_norm": lambda t: torch.linalg.vector_norm(t),
    "vector_norm_1": lambda t: torch.linalg.vector_norm(t, 1, dim=1),
    "vector_norm_inf": lambda t: torch.linalg.vector_norm(t, float("inf"), dim=0),
    "vector_norm_ninf": lambda t: torch.linalg.vector_norm(t, float("-inf"), dim=0),
    "vector_norm_0": lambda t: torch.linalg.vector_norm(t, 0, dim=1, keepdim=True),
    "vector_norm_3": lambda t: torch.linalg.vector_norm(t, 3, dim=-1),
    "norm": lambda t: t.norm(),
    "norm_dim": lambda t: t.norm(dim=1),
    "norm_p1": lambda t: t.norm(p=1, dim=0, keepdim=True),
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", list(SUM_LIKE), ids=str)
def test_op_dtypes(op, dtype):
    x = make(dtype)
    if dtype.is_floating_point and op.startswith(("prod", "cumprod")):
        x = x * 0.5 + 1  # keeps the products representable
    check(SUM_LIKE[op], x, **tol(dtype))


# --- layouts: views, 0-dim, zero-size ---

LAYOUT_OPS = {
    "sum0": lambda t: t.sum(0),
    "sum_neg_keep": lambda t: t.sum(-1, keepdim=True),
    "sum_all": lambda t: t.sum(),
    "mean": lambda t: t.mean(0),
    "prod": lambda t: t.prod(-1),
    "amax": lambda t: t.amax(0),
    "max_all": lambda t: t.max(),
    "max_dim": lambda t: tuple(t.max(-1)),
    "min_dim": lambda t: tuple(t.min(0, keepdim=True)),
    "argmax_all": lambda t: t.argmax(),
    "argmin_dim": lambda t: t.argmin(0),
    "all": lambda t: t.all(0),
    "any": lambda t: t.any(),
    "var": lambda t: t.var(0),
    "std_all": lambda t: t.std(),
    "logsumexp": lambda t: torch.logsumexp(t, -1),
    "norm": lambda t: torch.linalg.vector_norm(t, dim=0),
    "norm_inf": lambda t: torch.linalg.vector_norm(t, float("inf"), dim=0),
    "cumsum": lambda t: t.cumsum(0),
    "cumprod": lambda t: t.cumprod(-1),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.float16], ids=str)
@pytest.mark.parametrize("layout", [l[0] for l in LAYOUTS])
@pytest.mark.parametrize("op", list(LAYOUT_OPS))
def test_layouts(op, layout, dtype):
    view = dict(LAYOUTS)[layout]
    base = make(dtype, (4, 6), seed=1)
    check(lambda t: LAYOUT_OPS[op](view(t)), base, **tol(dtype))


# --- dtype= and out= ---

@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.float16, torch.float32])
def test_dtype_argument(dtype):
    x = make(torch.int32) if not dtype.is_floating_point else make(torch.float32)
    check(lambda t: t.sum(1, dtype=dtype), x, **tol(dtype))
    if dtype != torch.float16:  # the CPU has no float16 prod or cumsum
        check(lambda t: t.prod(dtype=dtype), x, **tol(dtype))
        check(lambda t: t.cumsum(0, dtype=dtype), x, **tol(dtype))
    if dtype.is_floating_point:
        check(lambda t: t.mean(0, dtype=dtype), x, **tol(dtype))
        check(lambda t: torch.linalg.vector_norm(t, dim=1, dtype=torch.float64), make(torch.float32))


def _out(fn, like_dtype, shape=(0,)):
    def run(t):
        out = torch.empty(shape, dtype=like_dtype, device=t.device)
        r = fn(t, out)
        assert r is out or (isinstance(r, tuple) and r[0] is out)
        return out
    return run


OUT_OPS = {
    "sum": (lambda t, o: torch.sum(t, 1, out=o), torch.float32),
    "sum_keep": (lambda t, o: torch.sum(t, (0, 1), keepdim=True, out=o), torch.float32),
    "mean": (lambda t, o: torch.mean(t, 0, out=o), torch.float32),
    "prod": (lambda t, o: torch.prod(t, 1, out=o), torch.float32),
    "amax": (lambda t, o: torch.amax(t, 1, out=o), torch.float32),
    "amin": (lambda t, o: torch.amin(t, 0, keepdim=True, out=o), torch.float32),
    "argmax": (lambda t, o: torch.argmax(t, 1, out=o), torch.int64),
    "argmin": (lambda t, o: torch.argmin(t, out=o), torch.int64),
    "all": (lambda t, o: torch.all(t, 1, out=o), torch.bool),
    "any": (lambda t, o: torch.any(t, 0, out=o), torch.bool),
    "var": (lambda t, o: torch.var(t, 1, out=o), torch.float32),
    "std": (lambda t, o: torch.std(t, 0, correction=0, out=o), torch.float32),
    "logsumexp": (lambda t, o: torch.logsumexp(t, 1, out=o), torch.float32),
    "vector_norm": (lambda t, o: torch.linalg.vector_norm(t, dim=1, out=o), torch.float32),
    "cumsum": (lambda t, o: torch.cumsum(t, 1, out=o), torch.float32),
    "cumprod": (lambda t, o: torch.cumprod(t, 0, out=o), torch.float32),
}


@pytest.mark.parametrize("op", list(OUT_OPS))
def test_out(op):
    fn, dtype = OUT_OPS[op]
    check(_out(fn, dtype), make(torch.float32))


def test_out_noncontiguous():
    def run(t):
        out = torch.zeros(6, 4, device=t.device).t()
        torch.sum(t, 2, out=out)
        torch.cumsum(t[:, :, 0], 0, out=out)
        return out
    check(run, make(torch.float32, (4, 6, 3)))


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_dim_out(op):
    def run(t):
        v = torch.empty(0, device=t.device)
        i = torch.empty(0, dtype=torch.long, device=t.device)
        r = getattr(torch, op)(t, 1, out=(v, i))
        assert r[0] is v and r[1] is i
        return v, i
    check(run, make(torch.float32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_cumsum_inplace(dtype):
    def run(t):
        t = t + 0
        v = t[:, 1:]
        v.cumsum_(1)
        t.cumprod_(0)
        return t
    check(run, make(dtype), **tol(dtype))


@pytest.mark.parametrize("case", ["float32_rows", "float32_columns", "bfloat16", "int32_dtype", "complex64",
                                  "cumprod"])
def test_scans_accumulate_as_the_cpu(case, tmp_path):
    """NOTE [Scan accumulators]: the running value is carried in the CPU's accumulation
    type (double for float32, float for the half types, complex<double>, int64) and each
    element rounded from it: the CPU's bits, where a float32 sum drifted by 0.03 over 1M
    elements. One kernel stores from the accumulator; a half type's scan is stored in
    float32 and rounded by a second."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(1 << 20, generator=g)
    fn = lambda t: t.cumsum(0)
    if case == "float32_columns":
        x, fn = x.view(-1, 4), lambda t: t.cumsum(0)
    elif case == "bfloat16":
        x = x[:4096].bfloat16()
    elif case == "int32_dtype":
        x, fn = (x * 1000).int(), lambda t: t.cumsum(0, dtype=torch.int32)
    elif case == "complex64":
        x = torch.complex(x[:65536], x[65536:131072])
    elif case == "cumprod":
        x, fn = 1 + x.view(1024, 1024) / 1000, lambda t: t.cumprod(1)
    want = fn(x)
    got = fn(x.to(loom.device)).cpu()
    assert got.dtype == want.dtype
    assert torch.equal(got, want)
    if case in ("bfloat16", "int32_dtype"):
        prog = ("import torch, loom\n"
                f"x = torch.load({str(tmp_path / 'x.pt')!r}).to(loom.device)\n"
                f"({'x.cumsum(0)' if case == 'bfloat16' else 'x.cumsum(-1, dtype=x.dtype)'}).cpu()\n")
        torch.save(x, tmp_path / "x.pt")
        assert len(kernel_sources(prog, tmp_path / "cache")) == (2 if case == "bfloat16" else 1)


@pytest.mark.parametrize("fn", [
    lambda x: torch.logcumsumexp(x, 0, out=torch.empty(8, dtype=torch.float64, device=x.device)),
    lambda x: x.double().cumsum_(0, dtype=torch.float32)])
def test_scan_dtype_errors_match_cpu(fn):
    x = torch.randn(8)
    with pytest.raises(RuntimeError) as want:
        fn(x)
    with pytest.raises(RuntimeError) as got:
        fn(x.to(loom.device))
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


# --- semantics ---

def test_nan_and_inf():
    x = torch.tensor([[1.0, float("nan"), 3.0, float("nan")],
                      [float("inf"), 2.0, float("-inf"), 0.0],
                      [float("-inf"), float("-inf"), float("-inf"), float("-inf")]])
    for fn in [lambda t: t.amax(1), lambda t: t.amin(1), lambda t: tuple(t.max(1)),
               lambda t: tuple(t.min(1)), lambda t: t.argmax(1), lambda t: t.argmin(1),
               lambda t: t.argmax(), lambda t: torch.logsumexp(t, 1), lambda t: t.sum(1),
               lambda t: torch.logsumexp(t[1:], 1), lambda t: torch.logsumexp(t[2:], (0, 1))]:
        check(fn, x)


def test_argmax_first_occurrence():
    x = torch.tensor([[1, 3, 3, 0], [2, 2, 2, 2], [5, 1, 5, 5]], dtype=torch.float32)
    for fn in [lambda t: t.argmax(1), lambda t: t.argmin(1), lambda t: t.argmax(0),
               lambda t: tuple(t.max(1)), lambda t: tuple(t.min(0)), lambda t: t.t().argmax()]:
        check(fn, x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32])
def test_arg_reductions_over_outer_dims(dtype):
    """argmax/argmin/max/min over a dim other than the innermost take blocks of columns
    (NOTE: column tiles in render_tiles.cpp): the first extreme, the first NaN, -0.0 equal
    to 0.0, over reductions long and short."""
    g = torch.Generator().manual_seed(11)
    pool = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, 1.0, -2.0])
    if dtype == torch.int32:
        pool = torch.tensor([3.0, -7.0, 0.0, 3.0, 5.0, 5.0, -7.0, 1.0])
    for shape, dim in [((40, 37), 0), ((6, 20, 33), 1), ((3, 5, 70), 1), ((64, 3, 17), 0)]:
        x = pool[torch.randint(0, len(pool), shape, generator=g)].to(dtype)
        for fn in [lambda t: t.argmax(dim), lambda t: t.argmin(dim), lambda t: tuple(t.max(dim)),
                   lambda t: tuple(t.min(dim)), lambda t: t.transpose(0, dim).argmax(0)]:
            check(fn, x)


def test_var_small_n():
    x = make(torch.float32, (3, 1))
    for fn in [lambda t: t.var(1), lambda t: torch.var(t, 1, correction=2), lambda t: t.std(1),
               lambda t: torch.var(t[:0], 0), lambda t: t[0, 0].var()]:
        check(fn, x)


def test_bigger_and_3d():
    x = make(torch.float32, (5, 37, 19), seed=3)
    for fn in [lambda t: t.sum((0, 2)), lambda t: t.mean((-1, 0), keepdim=True),
               lambda t: t.permute(2, 0, 1).amax((1, 2)), lambda t: t.var((0, 2)),
               lambda t: t[:, ::3, 1:].argmax(1), lambda t: t.cumsum(1), lambda t: t.transpose(0, 2).cumprod(0),
               lambda t: t.argmin(), lambda t: torch.logsumexp(t, (1,)), lambda t: t.norm(dim=(0, 2))]:
        check(fn, x, atol=1e-4, rtol=1e-4)


# --- errors ---

ERRORS = {
    "bad_dim": lambda t: t.sum(5),
    "bad_dim_neg": lambda t: t.amax(-3),
    "dup_dim": lambda t: t.sum((1, 1)),
    "max_dim_bad": lambda t: t.max(2),
    "argmax_bad": lambda t: t.argmax(3),
    "cumsum_bad": lambda t: t.cumsum(2),
    "var_bad": lambda t: t.var(4),
    "max_empty": lambda t: t[:0].max(),
    "min_empty": lambda t: t[:0].min(),
    "amax_empty": lambda t: t[:0].amax(0),
    "max_dim_empty": lambda t: t[:0].max(0),
    "argmax_empty": lambda t: t[:0].argmax(),
    "norm_inf_empty": lambda t: torch.linalg.vector_norm(t[:0], float("inf")),
    "mean_int": lambda t: t.int().mean(),
    "var_int": lambda t: t.int().var(),
    "norm_int": lambda t: torch.linalg.vector_norm(t.long()),
    "argmax_bool": lambda t: (t > 0).argmax(),
}


@pytest.mark.parametrize("op", list(ERRORS))
def test_errors(op):
    x = make(torch.float32)
    want, err = _call(ERRORS[op], x)
    assert err is not None, "CPU accepted it; the test expects an error"
    check(ERRORS[op], x)


# --- kernel counts ---

def _realized(shape=(5, 7), dtype=torch.float32):
    x = make(dtype, shape).to(loom.device)
    loom.sync()
    loom.reset_metrics()
    return x


def test_fused_prologue_is_one_kernel():
    x = _realized()
    y = (x * 2 + 1).sum(1)
    y.cpu()
    assert loom.metrics()["kernels_run"] == 1


@pytest.mark.parametrize("fn", [lambda t: t.sum(), lambda t: t.amax(0), lambda t: t.argmax(1),
                                lambda t: t.mean(1, keepdim=True), lambda t: t.cumsum(1),
                                lambda t: t.any(0), lambda t: t.t().prod(0)])
def test_single_reduction_is_one_kernel(fn):
    x = _realized()
    fn(x).cpu()
    assert loom.metrics()["kernels_run"] == 1


@pytest.mark.parametrize("fn,kernels", [
    (lambda t: torch.cumsum(t / t.sum(), 1), 2),  # the sum first, not at every scan step
    (lambda t: torch.cumsum(t / t.sum(1, keepdim=True), 1), 2),
    (lambda t: torch.cumsum(t * 2 + 1, 0), 1),
])
def test_reduction_under_a_scan_is_computed_once(fn, kernels):
    x = _realized((3, 20000))
    r = fn(x).cpu()
    assert loom.metrics()["kernels_run"] == kernels
    torch.testing.assert_close(r, fn(x.cpu()), rtol=1e-4, atol=1e-4)


def test_variance_of_everything_is_one_kernel():
    # The mean is computed before the sum of squares that reads it (NOTE [Hoisted
    # reductions]), not inside its loop: 256K elements would otherwise take 256K passes.
    # From 2^19 elements each of the two sums splits in two kernels (NOTE [Split
    # reductions]), their partial sums computed across threads.
    for n, kernels in ((1 << 18, 1), (1 << 20, 4)):
        x = _realized((n,))
        loom.reset_metrics()
        r = x.var()
        torch.testing.assert_close(r.cpu(), x.cpu().var(), rtol=1e-4, atol=0)
        assert loom.metrics()["kernels_run"] == kernels


def test_fallbacks_not_counted():
    x = make(torch.float32).to(loom.device)
    for fn in list(SUM_LIKE.values()):
        r = fn(x)
        for t in r if isinstance(r, tuple) else (r,):
            t.cpu()
    assert loom.metrics()["fallbacks"] == {}
    assert os.environ["LOOM_FALLBACK"] == "error"


OUT_DTYPE_CASES = {
    "sum_int_out": lambda t, d: torch.sum(t, 1, out=torch.empty(0, dtype=torch.int64, device=d)),
    "sum_double_out": lambda t, d: torch.sum(t, 1, out=torch.empty(0, dtype=torch.float64, device=d)),
    "sum_int_in_int_out": lambda t, d: torch.sum((t * 3).int(), 0, out=torch.empty(0, dtype=torch.int32, device=d)),
    "argmax_float_out": lambda t, d: torch.argmax(t, 1, out=torch.empty(0, device=d)),
    "amax_double_out": lambda t, d: torch.amax(t, 1, out=torch.empty(0, dtype=torch.float64, device=d)),
    "any_uint8_out": lambda t, d: torch.any(t, 1, out=torch.empty(0, dtype=torch.uint8, device=d)),
    "cumsum_double_out": lambda t, d: torch.cumsum(t, 1, out=torch.empty(0, dtype=torch.float64, device=d)),
    "var_double_out": lambda t, d: torch.var(t, 1, out=torch.empty(0, dtype=torch.float64, device=d)),
    "std_half_out": lambda t, d: torch.std(t, 0, out=torch.empty(0, dtype=torch.float16, device=d)),
    "var_long_out": lambda t, d: torch.var(t, 1, out=torch.empty(0, dtype=torch.int64, device=d)),
}


@pytest.mark.parametrize("case", list(OUT_DTYPE_CASES))
def test_out_dtypes(case):
    """out= of another dtype: the same result or the same exception type as the CPU."""
    check(lambda t: OUT_DTYPE_CASES[case](t, t.device), make(torch.float32))


def test_keepdim_all_dims_and_size_one():
    x = make(torch.float32, (1, 5, 1))
    for fn in [lambda t: t.argmax(keepdim=True), lambda t: t.argmin(None, True), lambda t: t.sum(0),
               lambda t: t.amax((0, 2)), lambda t: tuple(t.max(2)), lambda t: t.cumsum(0),
               lambda t: t.var(2), lambda t: t.sum(dim=None, keepdim=True)]:
        check(fn, x)
    check(lambda t: t.sum([]), torch.tensor(3.0))
    check(lambda t: t.argmax(0), torch.tensor(3.0))
    check(lambda t: tuple(t.max(-1)), torch.tensor(3.0))
    check(lambda t: t.cumprod(0), torch.tensor(3.0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool])
def test_nansum_and_count_nonzero(dtype):
    x = make(dtype, (4, 6))
    if dtype.is_floating_point:
        x[1, 2] = x[3, 0] = float("nan")
        x[2, :] = 0
    for t in (x, x.t(), x[:, ::2]):
        check(lambda a: torch.nansum(a), t)
        check(lambda a: torch.nansum(a, dim=1, keepdim=True), t)
        check(lambda a: torch.count_nonzero(a), t)
        check(lambda a: torch.count_nonzero(a, dim=(0,)), t)
    out = torch.empty(0, dtype=torch.float64, device=loom.device)
    if dtype.is_floating_point:
        torch.nansum(x.to(loom.device), 0, dtype=torch.float64, out=out)
        torch.testing.assert_close(out.cpu(), torch.nansum(x, 0, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="complex"):
        torch.nansum(torch.ones(2, dtype=torch.complex64, device=loom.device))


def test_equal():
    x = make(torch.float32, (3, 4))
    d = loom.device
    assert torch.equal(x.to(d), x.clone().to(d))
    assert torch.equal(x.t().to(d), x.t().contiguous().to(d))
    y = x.clone()
    y[2, 3] += 1
    assert not torch.equal(x.to(d), y.to(d))
    assert not torch.equal(x.to(d), x[:2].to(d))
    assert not torch.equal(torch.tensor([float("nan")], device=d), torch.tensor([float("nan")], device=d))
    assert torch.equal(x[:0].to(d), x[:0].to(d))
    # the CPU compares after type promotion
    for a, b in [(x, x.double()), (torch.tensor([1]), torch.tensor([1.5])),
                 (torch.tensor([True]), torch.tensor([2])), (torch.tensor([2]), torch.tensor([2.0]))]:
        assert torch.equal(a.to(d), b.to(d)) == torch.equal(a, b)


def special_values(dtype, seed):
    """Rows mixing NaN, infinities, signed zeros and ties, where first-wins rules matter."""
    g = torch.Generator().manual_seed(seed)
    pool = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, -1.0, 2.5, 2.5])
    return pool[torch.randint(0, len(pool), (37, 9), generator=g)].to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["argmax", "argmin", "max", "min", "amax", "amin"])
def test_extremes_with_nan_zeros_and_ties(dtype, op):
    # NOTE [NaN-sticky max], NOTE [Float arg reductions]: the first NaN wins, else the first
    # extreme; -0.0 ties with 0.0.
    for seed in range(4):
        x = special_values(dtype, seed)
        for dim in (0, 1):
            want = getattr(torch, op)(x, dim)
            got = getattr(torch, op)(x.to(loom.device), dim)
            if isinstance(want, tuple):
                torch.testing.assert_close(got.values.cpu(), want.values, equal_nan=True)
                assert torch.equal(got.indices.cpu(), want.indices)
            elif want.dtype == torch.int64:
                assert torch.equal(got.cpu(), want)
            else:
                torch.testing.assert_close(got.cpu(), want, equal_nan=True)
        if op in ("argmax", "argmin"):
            assert getattr(torch, op)(x.to(loom.device)).item() == getattr(torch, op)(x).item()


def test_bool_sum_is_an_or_even_when_fused_into_its_reader():
    # sum(dtype=bool) adds as C++ bools do (true + true stays true); a consumer fused into
    # the same kernel reads the accumulator before any store could normalize it.
    x = torch.tensor([[True, True, False], [False, False, False]])
    for fn in (lambda t: t.sum(1, dtype=torch.bool).float(),
               lambda t: t.int().sum(dtype=torch.bool).float() * 3,
               lambda t: torch.masked.mean(t)):
        want = fn(x)
        got = fn(x.to(loom.device)).cpu()
        assert torch.equal(got, want), (got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_logcumsumexp(dtype):
    x = torch.cat([torch.randn(4, 9) * 30,
                   torch.tensor([[-1000.0, 0.0, float("inf"), 1.0, float("-inf"), -float("inf"),
                                  float("nan"), 2.0, 3.0]])]).to(dtype)
    for dim in (0, 1, -1):
        want = torch.logcumsumexp(x, dim)
        got = torch.logcumsumexp(x.to(loom.device), dim).cpu()
        tol = dict(rtol=1e-2, atol=1e-2) if dtype == torch.bfloat16 else dict(rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(got, want, equal_nan=True, **tol)
    out = torch.empty(0, dtype=dtype, device=loom.device)
    torch.logcumsumexp(x.to(loom.device), 1, out=out)
    torch.testing.assert_close(out.cpu(), torch.logcumsumexp(x, 1), equal_nan=True, rtol=1e-2, atol=1e-2)
    assert torch.logcumsumexp(torch.tensor(2.0, dtype=dtype, device=loom.device), 0).item() == 2.0
    with pytest.raises(RuntimeError, match="logcumsumexp_out_cpu"):
        torch.logcumsumexp(torch.arange(3, device=loom.device), 0)
    t = torch.randn(3, 5, dtype=torch.float64)
    grads = []
    for dev in ("cpu", loom.device):
        a = t.clone().to(dev).requires_grad_()
        (torch.logcumsumexp(a, 1) * torch.arange(5.0, dtype=torch.float64, device=dev)).sum().backward()
        grads.append(a.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])


# var/std's results and errors are the CPU's std_var_out's (PyTorch's meta var is a Python
# decomposition whose messages differed): the same exception type and first line.
VAR_ERRORS = [
    lambda t: t.int().var(1),
    lambda t: (t > 0).std(),
    lambda t: torch.var_mean(t.long(), 0),
    lambda t: t.var(2),
    lambda t: t.std(-3),
    lambda t: torch.std_mean(t, (1, -1)),
    lambda t: t[0, 0].var(1),
]


@pytest.mark.parametrize("i", range(len(VAR_ERRORS)))
def test_var_errors_match_cpu(i):
    from cpu_errors import raises_like_cpu
    x = make(torch.float32)
    raises_like_cpu(lambda: VAR_ERRORS[i](x), lambda: VAR_ERRORS[i](x.to(loom.device)))


def test_var_out_dtypes_match_cpu():
    # A complex input's variance computes in the real dtype of out's: a complex out holds it
    # with no imaginary part; a real input takes a floating out only.
    from cpu_errors import outcome_like_cpu
    for dtype, out_dtype in [(torch.complex64, torch.complex64), (torch.complex64, torch.float64),
                             (torch.complex128, torch.complex64), (torch.float32, torch.float64),
                             (torch.float32, torch.bfloat16), (torch.complex64, torch.float16)]:
        x = make(torch.float32, (3, 8)).to(dtype)
        for fn in (torch.var, torch.std) if out_dtype != torch.float16 else (torch.var,):
            want = fn(x, 1, out=torch.empty(0, dtype=out_dtype))
            got = fn(x.to(loom.device), 1, out=torch.empty(0, dtype=out_dtype, device=loom.device))
            assert (got.dtype, got.shape) == (want.dtype, want.shape)
            tol = dict(rtol=1e-2, atol=1e-2) if out_dtype in (torch.bfloat16, torch.float16) else {}
            torch.testing.assert_close(got.cpu(), want, **tol)
    for fn, dtype, out_dtype in [(torch.var, torch.float32, torch.complex64),
                                 (torch.var, torch.float32, torch.int64),
                                 (torch.var, torch.complex64, torch.int32),
                                 (torch.std, torch.complex64, torch.float16)]:  # 2.x: computes
        x = make(torch.float32, (3, 8)).to(dtype)
        outcome_like_cpu(lambda: fn(x, 1, out=torch.empty(0, dtype=out_dtype)),
                         lambda: fn(x.to(loom.device), 1,
                                    out=torch.empty(0, dtype=out_dtype, device=loom.device)),
                         rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64], ids=str)
def test_var_layouts_match_cpu(dtype):
    x = make(torch.float32, (3, 4, 5)).to(dtype)
    for fn in [lambda t: t.var(1), lambda t: t.std((0, 2), keepdim=True), lambda t: t.var(),
               lambda t: t[0, 0, 0].var(0), lambda t: torch.var_mean(t, -1, keepdim=True),
               lambda t: torch.std_mean(t, []), lambda t: t.transpose(0, 2).var(1)]:
        want = fn(x)
        got = fn(x.to(loom.device))
        for w, g in zip(want if isinstance(want, tuple) else (want,),
                        got if isinstance(got, tuple) else (got,)):
            assert (g.dtype, g.shape, g.stride()) == (w.dtype, w.shape, w.stride())
            torch.testing.assert_close(g.cpu(), w, rtol=1e-4, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int8, torch.int64, torch.float32,
                                   torch.float64, torch.complex64], ids=str)
def test_prod_all_dtypes_match_cpu(dtype):
    x = (make(torch.float32, (2, 3)).abs() + 1).round().to(dtype)
    for fn in [lambda t: t.prod(), lambda t: t.t().prod(), lambda t: t.prod(dtype=torch.float64),
               lambda t: t[:0].prod()]:
        want, got = fn(x), fn(x.to(loom.device))
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        torch.testing.assert_close(got.cpu(), want)
