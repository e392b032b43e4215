"""Factories and random fills on Loom, compared with CPU torch.

Random values come from Loom's own counter-based generator (seeded from torch's default
generator), so they are checked by their statistics, not against CPU's stream.
"""
import math

import pytest
import torch

import loom

D = loom.device
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def same(loom_t, cpu_t, **kw):
    assert loom_t.device.type == D.type
    assert loom_t.dtype == cpu_t.dtype
    assert loom_t.shape == cpu_t.shape
    assert loom_t.stride() == cpu_t.stride()
    torch.testing.assert_close(loom_t.cpu(), cpu_t, equal_nan=True, **kw)


# --- deterministic factories ---

CASES = {
    "empty_strided": lambda **d: torch.empty_strided((2, 3), (1, 2), **d).fill_(1.5),
    "zeros_int64": lambda **d: torch.zeros(2, 3, dtype=torch.int64, **d),
    "ones": lambda **d: torch.ones(4, **d),
    "ones_bool": lambda **d: torch.ones(2, 2, dtype=torch.bool, **d),
    "full": lambda **d: torch.full((2, 3), 7.0, **d),
    "full_int": lambda **d: torch.full((3,), 7, **d),
    "full_0dim": lambda **d: torch.full((), -2.5, **d),
    "zeros_empty": lambda **d: torch.zeros(0, 3, **d),
    "arange_step": lambda **d: torch.arange(0, 10, 3, **d),
    "arange_float": lambda **d: torch.arange(10.0, **d),
    "arange_frac": lambda **d: torch.arange(1, 2, 0.1, **d),
    "arange_neg": lambda **d: torch.arange(5, -5, -1.5, **d),
    "arange_dtype": lambda **d: torch.arange(0, 7, dtype=torch.int8, **d),
    "arange_half": lambda **d: torch.arange(0, 20, 0.5, dtype=torch.float16, **d),
    "arange_double": lambda **d: torch.arange(-1, 1, 0.01, dtype=torch.float64, **d),
    "arange_empty": lambda **d: torch.arange(3, 3, **d),
    "linspace": lambda **d: torch.linspace(0, 1, 7, **d),
    "linspace_one": lambda **d: torch.linspace(2, 5, 1, **d),
    "linspace_zero": lambda **d: torch.linspace(2, 5, 0, **d),
    "linspace_int_exact": lambda **d: torch.linspace(0, 20, 11, dtype=torch.int64, **d),
    "linspace_double": lambda **d: torch.linspace(-3.3, 17.9, 101, dtype=torch.float64, **d),
    "eye": lambda **d: torch.eye(3, **d),
    "eye_rect": lambda **d: torch.eye(3, 5, **d),
    "eye_int": lambda **d: torch.eye(4, 2, dtype=torch.int32, **d),
    "eye_bool": lambda **d: torch.eye(3, dtype=torch.bool, **d),
    "scalar_tensor": lambda **d: torch.scalar_tensor(3.5, **d),
    "tensor": lambda **d: torch.tensor([[1, 2], [3, 4]], **d),
}


@pytest.mark.parametrize("name", CASES)
def test_factory(name):
    fn = CASES[name]
    same(fn(device=D), fn())


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("args", [(0, 1, 7), (-3.3, 17.9, 1001), (5, -3, 50), (-100, 100, 33),
                                  (-3.3, 100, 200)])
def test_linspace_float(dtype, args):
    # Loom mirrors CPU's vectorized loop; fma contraction differs between the compilers, so
    # allow one ulp of the endpoints' magnitude (near-zero elements lose relative precision).
    got, want = torch.linspace(*args, dtype=dtype, device=D).cpu(), torch.linspace(*args, dtype=dtype)
    ulp = torch.finfo(dtype).eps * max(abs(args[0]), abs(args[1]))
    assert ((got.double() - want.double()).abs() <= ulp).all()
    assert got[0] == want[0] and got[-1] == want[-1]


def test_linspace_bool_raises():
    with pytest.raises(RuntimeError):
        torch.linspace(0, 1, 3, dtype=torch.bool)
    with pytest.raises(RuntimeError):
        torch.linspace(0, 1, 3, dtype=torch.bool, device=D)


@pytest.mark.parametrize("bad", [lambda **d: torch.arange(0, 10, 0, **d),
                                 lambda **d: torch.arange(0, 10, -1, **d),
                                 lambda **d: torch.linspace(0, 1, -1, **d),
                                 lambda **d: torch.eye(-1, **d)])
def test_factory_errors(bad):
    with pytest.raises(RuntimeError):
        bad()
    with pytest.raises(RuntimeError):
        bad(device=D)


def test_out_variants():
    out = torch.empty(0, device=D)
    torch.arange(0, 5, out=out)
    same(out, torch.arange(0, 5, out=torch.empty(0)))
    out = torch.empty(2, 2, dtype=torch.float64, device=D)
    torch.linspace(0, 1, 5, out=out)
    same(out, torch.linspace(0, 1, 5, dtype=torch.float64))
    out = torch.empty(1, device=D, dtype=torch.int64)
    torch.eye(2, 3, out=out)
    same(out, torch.eye(2, 3, dtype=torch.int64))


def test_arange_into_view():
    base = torch.zeros(4, 6, device=D)
    torch.arange(4.0, out=base[:, 1])
    ref = torch.zeros(4, 6)
    torch.arange(4.0, out=ref[:, 1])
    same(base, ref)


# NOTE [Sequences into any shape]: an out= with as many elements as the sequence keeps its
# shape and strides and takes the sequence in row-major order.
SEQUENCES = {
    "arange": lambda out: torch.arange(0.5, 36.5, out=out),
    "arange_int": lambda out: torch.arange(3, 75, 2, out=out),
    "linspace": lambda out: torch.linspace(-2, 9, 36, out=out),
    "logspace": lambda out: torch.logspace(-1, 1, 36, out=out),
}
OUTS = {
    "permuted": lambda dt, dev: torch.zeros(3, 3, 4, dtype=dt, device=dev).permute(2, 0, 1),
    "3d": lambda dt, dev: torch.zeros(4, 3, 3, dtype=dt, device=dev),
    "column": lambda dt, dev: torch.zeros(36, 2, dtype=dt, device=dev)[:, 1],
    "transposed": lambda dt, dev: torch.zeros(6, 6, dtype=dt, device=dev).t(),
}


SEQUENCE_DTYPES = [(seq, dt) for seq in SEQUENCES if seq != "arange_int"
                   for dt in (torch.float32, torch.float64)] + [("arange_int", torch.int64),
                                                                ("linspace", torch.int64)]


@pytest.mark.parametrize("out", OUTS)
@pytest.mark.parametrize("seq,dtype", SEQUENCE_DTYPES)
def test_sequence_into_any_shape(seq, out, dtype):
    ref, got = OUTS[out](dtype, "cpu"), OUTS[out](dtype, D)
    SEQUENCES[seq](ref), SEQUENCES[seq](got)
    same(got, ref)


@pytest.mark.parametrize("seq", SEQUENCES)
def test_sequence_into_expanded_raises(seq):
    ref = torch.zeros(1).expand(36)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        SEQUENCES[seq](ref)
    got = torch.zeros(1, device=D).expand(36)
    with pytest.raises(RuntimeError, match="unsupported operation"):
        SEQUENCES[seq](got)


def test_linspace_vectorized_base_in_any_shape():
    # Within the CPU's vector blocks each element is its block's base plus j * step: the
    # block follows the row-major position too.
    ref = torch.rand(3, 3, 1000).permute(2, 0, 1)
    got = ref.to(D)
    torch.linspace(0, 9000, 9000, out=ref)
    torch.linspace(0, 9000, 9000, out=got)
    same(got, ref, rtol=0, atol=0)
    assert torch.equal(got.flatten().cpu(), torch.linspace(0, 9000, 9000))


LIKE = {
    "empty_like": lambda t: torch.empty_like(t).fill_(2),
    "zeros_like": torch.zeros_like,
    "ones_like": torch.ones_like,
    "full_like": lambda t: torch.full_like(t, 3),
    "zeros_like_dtype": lambda t: torch.zeros_like(t, dtype=torch.int32),
    "new_zeros": lambda t: t.new_zeros(2, 3),
    "new_ones": lambda t: t.new_ones(4),
    "new_full": lambda t: t.new_full((2,), 9.0),
    "new_empty_strided": lambda t: t.new_empty_strided((2, 2), (1, 2)).fill_(1),
}


@pytest.mark.parametrize("name", LIKE)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_like(name, layout):
    def make(dev):
        t = torch.arange(24.0).reshape(4, 6).to(dev)
        return {"contiguous": t, "transposed": t.t(), "sliced": t[:, ::2]}[layout]

    same(LIKE[name](make(D)), LIKE[name](make("cpu")))


# --- random fills ---

N = 100_000


def stats(x):
    x = x.cpu().double()
    return x.mean().item(), x.std().item(), x.min().item(), x.max().item()


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand(dtype):
    x = torch.rand(N, dtype=dtype, device=D)
    assert x.dtype == dtype and x.shape == (N,)
    mean, std, lo, hi = stats(x)
    assert abs(mean - 0.5) < 0.01 and abs(std - math.sqrt(1 / 12)) < 0.01
    assert lo >= 0 and hi <= 1 and (hi < 1 or dtype in (torch.float16, torch.bfloat16))


def test_uniform_range():
    x = torch.empty(N, device=D).uniform_(-3, 5)
    mean, std, lo, hi = stats(x)
    assert abs(mean - 1) < 0.05 and abs(std - 8 / math.sqrt(12)) < 0.05
    assert -3 <= lo and hi < 5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_randn(dtype):
    x = torch.randn(N, dtype=dtype, device=D)
    assert x.dtype == dtype
    mean, std, _, _ = stats(x)
    assert abs(mean) < 0.02 and abs(std - 1) < 0.02


def test_normal_params():
    mean, std, _, _ = stats(torch.empty(N, device=D).normal_(3, 0.5))
    assert abs(mean - 3) < 0.01 and abs(std - 0.5) < 0.01
    m = torch.full((N,), 2.0, device=D)
    for x, (em, es) in [(torch.normal(m, 3.0), (2, 3)), (torch.normal(-1.0, m), (-1, 2)),
                        (torch.normal(m, m), (2, 2))]:
        assert x.device.type == D.type and x.shape == (N,)
        mean, std, _, _ = stats(x)
        assert abs(mean - em) < 0.05 and abs(std - es) < 0.05


def test_normal_broadcast_shape():
    x = torch.normal(torch.zeros(3, 1, device=D), torch.ones(1, 4, device=D))
    assert x.shape == torch.normal(torch.zeros(3, 1), torch.ones(1, 4)).shape


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.uint8])
def test_bernoulli_float(dtype):
    x = torch.empty(N, dtype=dtype, device=D).bernoulli_(0.3)
    assert x.dtype == dtype
    xc = x.cpu()
    assert ((xc == 0) | (xc == 1)).all()
    assert abs(xc.double().mean().item() - 0.3) < 0.01


def test_bernoulli_tensor():
    p = torch.cat([torch.zeros(N // 2), torch.full((N // 2,), 0.8)]).to(D)
    x = torch.bernoulli(p).cpu()
    assert (x[: N // 2] == 0).all()
    assert abs(x[N // 2:].mean().item() - 0.8) < 0.01
    y = torch.empty(N, device=D).bernoulli_(p).cpu()
    assert abs(y.mean().item() - 0.4) < 0.01
    z = torch.bernoulli(torch.full((N,), 0.25, device=D), 0.6).cpu()  # bernoulli.p
    assert abs(z.mean().item() - 0.6) < 0.01


def test_exponential():
    mean, std, lo, _ = stats(torch.empty(N, device=D).exponential_(2.0))
    assert abs(mean - 0.5) < 0.01 and abs(std - 0.5) < 0.02 and lo >= 0


def test_cauchy_log_normal_geometric():
    # Medians and means from 100K draws; the CPU draws other values from the same laws.
    x = torch.empty(N, device=D).cauchy_(1.5, 2.0).cpu().double()
    assert abs(x.median().item() - 1.5) < 0.05
    assert abs(((x - 1.5).abs() < 2.0).double().mean().item() - 0.5) < 0.01  # quartiles at +-sigma
    x = torch.empty(N, device=D, dtype=torch.float64).log_normal_(0.5, 0.25).cpu()
    assert abs(x.log().mean().item() - 0.5) < 0.01 and abs(x.log().std().item() - 0.25) < 0.01
    for dtype in (torch.float32, torch.int64, torch.int16):
        x = torch.empty(N, device=D, dtype=dtype).geometric_(0.25).cpu().double()
        assert x.min().item() == 1 and abs(x.mean().item() - 4.0) < 0.06
        assert abs((x == 1).double().mean().item() - 0.25) < 0.01
    for fn in (lambda t: t.cauchy_(), lambda t: t.log_normal_(), lambda t: t.geometric_(0.5)):
        a, b = fn(torch.empty(64, device=D)), fn(torch.empty(64, device=D))
        assert not torch.equal(a.cpu(), b.cpu())  # each call draws anew
        torch.manual_seed(7)
        a = fn(torch.empty(64, device=D)).cpu()
        torch.manual_seed(7)
        assert torch.equal(fn(torch.empty(64, device=D)).cpu(), a)


def test_normal_out_forms():
    mean, std = torch.zeros(200, 300), torch.full((200, 300), 2.0)
    for fn in (lambda m, s, o: torch.normal(m, 2.0, out=o), lambda m, s, o: torch.normal(0.0, s, out=o),
               lambda m, s, o: torch.normal(m, s, out=o)):
        for out_shape in ((0,), (200, 300), (2, 200, 300), (7, 3)):
            out = torch.empty(out_shape, device=D)
            try:  # the CPU's sizes, or its error (an empty out with a tensor mean, 7x3)
                want = fn(mean, std, torch.empty(out_shape))
            except RuntimeError as e:
                with pytest.raises(RuntimeError) as info:
                    fn(mean.to(D), std.to(D), out)
                assert str(info.value) == str(e)
                continue
            got = fn(mean.to(D), std.to(D), out)
            assert got is out and got.shape == want.shape and got.stride() == want.stride()
            assert abs(got.cpu().std().item() - 2.0) < 0.05


def test_normal_std_must_be_nonnegative():
    # NOTE [Checked std]: a std copied in is checked at the op, as the CPU's (it reads
    # std.min()); a computed one by the kernel, raising at the next realization.
    msg = "normal expects all elements of std >= 0.0"
    for std in (torch.tensor(-1.0), torch.tensor([1.0, float("nan")]), torch.full((3, 4), -0.5)):
        with pytest.raises(RuntimeError, match=msg):
            torch.normal(0.0, std)
        with pytest.raises(RuntimeError, match=msg):
            torch.normal(0.0, std.to(D))
        with pytest.raises(RuntimeError, match=msg):
            torch.normal(torch.zeros(std.shape, device=D), std.to(D), out=torch.empty(0, device=D))
    pending = torch.ones(5, device=D) - torch.tensor([0.0, 0, 3, 0, 0], device=D)  # one is -2
    r = torch.normal(torch.zeros(5, device=D), pending)
    with pytest.raises(RuntimeError, match=msg):
        r.cpu()
    fine = torch.ones(5, device=D) * 2  # pending, and valid
    assert abs(torch.normal(0.0, fine.expand(1000, 5)).cpu().std().item() - 2) < 0.1
    assert torch.normal(1.0, torch.zeros(3, device=D)).cpu().tolist() == [1.0, 1.0, 1.0]


@pytest.mark.filterwarnings("ignore:.*out of bounds")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_random_bounds_held_by_the_dtype(dtype):
    # random_(from, to) moves bounds the dtype cannot hold inward, as the CPU (its
    # update_from / update_to): float16's 65503 would round up to `to`, so it draws up to
    # 65472.
    for args in ((65504,), (0, 32752), (-2049, 2049), (2 ** 24 + 1,)):
        if dtype == torch.float16 and max(abs(a) for a in args) > 65504:
            continue
        got = torch.empty(N, dtype=dtype, device=D).random_(*args).cpu().double()
        lo, hi = (0, args[0]) if len(args) == 1 else args
        assert got.min() >= lo and got.max() < hi
    x = torch.empty(N, dtype=torch.float16, device=D).random_(65504).cpu().double()
    assert x.max() == 65472
    x = torch.empty(N, dtype=torch.float16, device=D).random_(0, 32752).cpu().double()
    assert x.max() == 32736


@pytest.mark.filterwarnings("ignore:torch.range is deprecated")
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float64,
                                   torch.bfloat16, torch.int16])
def test_range(dtype):
    for args in ((0, 5), (1, 10, 3), (10, 1, -2), (0.5, 3.0, 0.25), (-3, 3, 0.7)):
        if dtype.is_floating_point or all(float(a).is_integer() for a in args):
            same(torch.range(*args, dtype=dtype, device=D), torch.range(*args, dtype=dtype))
    for bad in ((0, 5, 0), (5, 0, 1), (0, float("inf"))):
        with pytest.raises(RuntimeError) as want:
            torch.range(*bad, dtype=torch.float32)
        with pytest.raises(RuntimeError) as got:
            torch.range(*bad, dtype=torch.float32, device=D)
        assert str(got.value) == str(want.value)


def test_randperm():
    for n, dtype in ((0, torch.int64), (1, torch.int64), (1000, torch.int64), (5000, torch.float32),
                     (300, torch.int16), (100, torch.bfloat16)):
        p = torch.randperm(n, dtype=dtype, device=D)
        assert p.device.type == D.type and p.dtype == dtype and p.shape == (n,)
        assert torch.equal(p.cpu().long().sort().values, torch.arange(n))
    torch.manual_seed(3)
    a = torch.randperm(100, device=D).cpu()
    torch.manual_seed(3)
    assert torch.equal(torch.randperm(100, device=D).cpu(), a)
    assert not torch.equal(torch.randperm(100, device=D).cpu(), a)
    # Every position takes every value about as often (a uniform shuffle).
    counts = torch.zeros(8, 8)
    for _ in range(2000):
        counts[torch.arange(8), torch.randperm(8, device=D).cpu()] += 1
    assert (counts - 250).abs().max() < 80
    out = torch.empty(3, 4, device=D, dtype=torch.int64)
    assert torch.randperm(12, out=out) is out and out.shape == (12,)
    for bad in (lambda **d: torch.randperm(-1, **d), lambda **d: torch.randperm(5000, dtype=torch.half, **d),
                lambda **d: torch.randperm(5, dtype=torch.bool, **d)):
        with pytest.raises(RuntimeError) as want:
            bad()
        with pytest.raises(RuntimeError) as got:
            bad(device=D)
        assert str(got.value).split(":")[0] == str(want.value).split(":")[0]


@pytest.mark.parametrize("dtype", INTS + [torch.float32])
def test_randint(dtype):
    x = torch.randint(3, 10, (N,), dtype=dtype, device=D)
    assert x.dtype == dtype
    xc = x.cpu()
    assert xc.min() == 3 and xc.max() == 9
    assert (xc == xc.round()).all()
    counts = torch.bincount(xc.long())[3:]
    assert (counts - N / 7).abs().max() < 0.05 * N / 7


@pytest.mark.parametrize("dtype", INTS + FLOATS + [torch.bool])
def test_random_default_range(dtype):
    x = torch.empty(N, dtype=dtype, device=D).random_().cpu()
    if dtype == torch.bool:
        hi = 1
    elif dtype.is_floating_point:
        hi = 2 ** {torch.float32: 24, torch.float64: 53, torch.float16: 11, torch.bfloat16: 8}[dtype]
    else:
        hi = torch.iinfo(dtype).max
    xd = x.double()
    assert xd.min() >= 0 and xd.max() <= hi
    assert abs(xd.mean().item() / hi - 0.5) < 0.02
    assert (xd == xd.round()).all()


def test_random_to_and_from():
    x = torch.empty(N, dtype=torch.int64, device=D).random_(5).cpu()
    assert x.min() == 0 and x.max() == 4
    x = torch.empty(N, dtype=torch.int16, device=D).random_(-7, 3).cpu()
    assert x.min() == -7 and x.max() == 2
    x = torch.empty(N, dtype=torch.int8, device=D).random_(100, None).cpu()
    assert x.min() == 100 and x.max() == 127
    big = torch.empty(N, dtype=torch.int64, device=D).random_(-2 ** 63, None).cpu()
    assert (big < 0).any() and (big > 0).any()
    assert abs(big.double().mean().item()) / 2.0 ** 63 < 0.02


@pytest.mark.parametrize("bad", [
    lambda **d: torch.empty(3, **d).uniform_(2, 1),
    lambda **d: torch.empty(3, dtype=torch.int64, **d).uniform_(),
    lambda **d: torch.empty(3, dtype=torch.int64, **d).normal_(),
    lambda **d: torch.empty(3, **d).normal_(0, -1),
    lambda **d: torch.empty(3, **d).bernoulli_(1.5),
    lambda **d: torch.empty(3, **d).exponential_(-1),
    lambda **d: torch.empty(3, **d).log_normal_(0, 0),
    lambda **d: torch.empty(3, dtype=torch.int32, **d).log_normal_(),
    lambda **d: torch.empty(3, **d).geometric_(1.0),
    lambda **d: torch.empty(3, dtype=torch.bool, **d).geometric_(0.5),
    lambda **d: torch.empty(3, dtype=torch.int64, **d).cauchy_(),
    lambda **d: torch.empty(3, dtype=torch.int8, **d).random_(0, 1000),
    lambda **d: torch.empty(3, **d).random_(5, 2),
])
def test_random_errors(bad):
    with pytest.raises(RuntimeError):
        bad()
    with pytest.raises(RuntimeError):
        bad(device=D)


@pytest.mark.parametrize("fn", [lambda: torch.rand(1000, device=D),
                                lambda: torch.randn(1000, device=D),
                                lambda: torch.randint(0, 1000, (1000,), device=D),
                                lambda: torch.empty(1000, device=D).bernoulli_(0.5),
                                lambda: torch.empty(1000, device=D).exponential_()])
def test_seeding(fn):
    torch.manual_seed(123)
    a, b = fn().cpu(), fn().cpu()
    torch.manual_seed(123)
    a2 = fn().cpu()
    torch.manual_seed(124)
    c = fn().cpu()
    assert torch.equal(a, a2)
    assert not torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("fn", [lambda x: torch.nn.functional.dropout(x, 0.25, True),
                                lambda x: x + torch.randn_like(x),
                                lambda x: x * torch.rand_like(x, dtype=torch.float64)])
def test_draws_reuse_their_kernel(fn):
    """NOTE [Random arguments]: a draw's seed and offset are kernel arguments, so a second
    draw (a dropout every step) runs the kernel of the first, with other values."""
    x = torch.ones(64, 48, device=D)
    loom.sync()
    a = fn(x).cpu()
    loom.reset_metrics()
    b = fn(x).cpu()
    m = loom.metrics()
    assert (m["kernels_compiled"], m["plan_hits"]) == (0, m["kernels_run"])
    assert not torch.equal(a, b)


def test_explicit_generator():
    g = torch.Generator().manual_seed(7)
    a = torch.rand(100, device=D, generator=g).cpu()
    g.manual_seed(7)
    assert torch.equal(a, torch.rand(100, device=D, generator=g).cpu())


def test_rand_like_and_views():
    t = torch.zeros(40, 60, device=D).t()
    r = torch.rand_like(t)
    assert r.stride() == torch.rand_like(torch.zeros(40, 60).t()).stride()
    rn = torch.randn_like(t)
    assert rn.shape == (60, 40)
    ri = torch.randint_like(t, 4, 8).cpu()
    assert ri.min() >= 4 and ri.max() <= 7
    # a fill of a non-contiguous view writes only the view, and the base sees it
    base = torch.zeros(100, 200, device=D)
    base[:, ::2].uniform_(1, 2)
    bc = base.cpu()
    assert (bc[:, 1::2] == 0).all()
    assert (bc[:, ::2] >= 1).all() and (bc[:, ::2] < 2).all()
    assert bc[:, ::2].unique().numel() > 9000


@pytest.mark.parametrize("value,dtype", [(3, None), (2.5, torch.float64), (True, torch.bool),
                                         (-7, torch.int8), (1 + 2j, torch.complex64),
                                         (3, torch.float16), (2.5, torch.int64)])
def test_scalar_tensor_matches_cpu(value, dtype):
    """scalar_tensor has a kernel of its own (a Python scalar written into a Loom tensor
    through indexing makes one per write): dtype, shape, strides, value as the CPU's."""
    got, want = torch.scalar_tensor(value, dtype=dtype, device=D), torch.scalar_tensor(value, dtype=dtype)
    assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
    assert torch.equal(got.cpu(), want)


@pytest.mark.parametrize("value,dtype", [(300, torch.int8), (1 + 2j, torch.float32)])
def test_scalar_tensor_errors_match_cpu(value, dtype):
    with pytest.raises(RuntimeError) as cpu:
        torch.scalar_tensor(value, dtype=dtype)
    with pytest.raises(RuntimeError) as ours:
        torch.scalar_tensor(value, dtype=dtype, device=D)
    assert str(ours.value) == str(cpu.value)


def test_setitem_scalars_one_kernel():
    x = torch.zeros(6, device=D)
    loom.sync()
    loom.reset_metrics()
    for i in range(6):
        x[i] = i * 1.5
    assert x.cpu().tolist() == [i * 1.5 for i in range(6)]
    assert loom.metrics()["kernels_run"] == 1
