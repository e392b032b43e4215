"""Ops that move values between positions (flip, roll, tril/triu, diag, cat/stack, trace,
narrow_copy) on Loom vs CPU torch: values, dtype, shape and strides over dtypes and input
layouts, their in-place and out= forms, the CPU's exception types, zero fallbacks, and the
kernel counts that the design fixes (ops_shape.cpp, NOTE [Pieces, not selects]).
"""
import random

import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device
DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.float16,
          torch.bfloat16]
REDUCED = (torch.float16, torch.bfloat16)
# Every dtype on contiguous inputs, a few on strided ones (kernels differ by element type
# and by strides, rarely by both; each distinct kernel costs a compile on a cold cache).
CASES = [(d, "contiguous") for d in DTYPES] + [
    (d, k) for k in ("transposed", "sliced") for d in (torch.float32, torch.bool, torch.bfloat16)]


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-50, 50, shape, generator=g, dtype=torch.int64)
    if dtype == torch.bool:
        return x > 0
    if dtype.is_floating_point:
        return (x.to(torch.float64) / 8).to(dtype)
    return x.to(dtype)


# A layout is a view applied to a base tensor, once on CPU and once on Loom: moving a
# non-dense view to another device would make it contiguous.
LAYOUTS = {
    "contiguous": (lambda s: s, lambda b: b),
    "transposed": (lambda s: s[:-2] + (s[-1], s[-2]), lambda b: b.transpose(-1, -2)),
    "sliced": (lambda s: (2 * s[0] + 1,) + s[1:-1] + (s[-1] + 2,), lambda b: b[1::2, ..., 2:]),
}


def pair(shape, dtype=torch.float32, kind="contiguous", seed=0):
    """A CPU tensor of `shape` in the given layout and its Loom twin (same strides)."""
    base_shape, view = LAYOUTS[kind]
    if kind == "sliced" and len(shape) == 1:
        base_shape, view = (lambda s: (2 * s[0] + 2,)), (lambda b: b[2::2])
    base = sample(base_shape(tuple(shape)), dtype, seed)
    c, l = view(base), view(base.to(D))
    assert c.shape == tuple(shape) and l.stride() == c.stride()
    return c, l


def compare(got, want, exact=True):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            compare(g, w, exact)
        return
    assert got.device.type == D.type
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    if exact:
        assert torch.equal(got.cpu(), want)
    else:
        torch.testing.assert_close(got.cpu(), want, equal_nan=True)


def check(fn, cpu_args, loom_args, exact=True):
    """fn on CPU and on Loom: equal results, or the same exception type."""
    try:
        want = fn(*cpu_args)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn(*loom_args)
        return None
    got = fn(*loom_args)
    compare(got, want, exact)
    return got


def check_errors(fn, *cpu_args):
    loom_args = [a.to(D) if isinstance(a, torch.Tensor) else a for a in cpu_args]
    with pytest.raises(Exception) as info:
        fn(*cpu_args)
    with pytest.raises(info.type):
        fn(*loom_args)


def kernels(fn, *args):
    """Kernels run computing fn(*args).cpu() with args realized beforehand."""
    loom.sync()
    loom.reset_metrics()
    fn(*args).cpu()
    return loom.metrics()["kernels_run"]


# --- flip ---

FLIP_DIMS = [(0,), (1,), (-1,), (0, 2), (0, 1, 2), ()]


@pytest.mark.parametrize("dtype,kind", CASES, ids=str)
def test_flip(dtype, kind):
    c, l = pair((3, 4, 5), dtype, kind)
    for dims in FLIP_DIMS if dtype == torch.float32 else [(-1,), (0, 2)]:
        check(lambda x: torch.flip(x, dims), (c,), (l,))


@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1, 5), (7,)])
def test_flip_edge_shapes(shape):
    c, l = pair(shape)
    for dims in [(), (0,), (-1,)]:
        check(lambda x: torch.flip(x, dims), (c,), (l,))


def test_flip_layouts_as_cpu():
    c, l = pair((2, 3, 4, 5))
    c, l = c.to(memory_format=torch.channels_last), l.to(memory_format=torch.channels_last)
    check(lambda x: x.flip(1), (c,), (l,))
    # a non-dense input: the result takes the input's dim order, densely (empty_like)
    check(lambda x: x.permute(3, 2, 1, 0)[::2].flip(1), (c,), (l,))
    check(lambda x: x.expand(2, 2, 3, 4, 5).flip(0, 3), (c,), (l,))
    check(lambda x: torch.fliplr(x[0, 0]), (c,), (l,))
    check(lambda x: torch.flipud(x[0, 0]), (c,), (l,))
    check(lambda x: torch.rot90(x[0, 0], 1), (c,), (l,))
    check(lambda x: torch.rot90(x[0, 0], -1, (1, 0)), (c,), (l,))
    check(lambda x: torch.ops.aten.flip.out(x, (1,), out=torch.empty(0, device=x.device)),
          (c,), (l,))


def test_flip_errors():
    x = sample((3, 4), torch.float32)
    check_errors(lambda t: t.flip(0, 0), x)
    check_errors(lambda t: t.flip(0, -2), x)
    check_errors(lambda t: t.flip(2), x)
    check_errors(lambda t: t.flip(-3), x)


def test_flip_of_realized_input_fuses():
    x = sample((6, 8), torch.float32).to(D)
    assert kernels(lambda t: t.flip(0) + 1, x) == 1
    assert kernels(lambda t: t.flip(0, 1) * t, x) == 1


def test_flip_of_lazy_value_fuses():
    x = sample((6, 8), torch.float32).to(D)
    n = kernels(lambda t: (t * 2).flip(0) + 1, x)
    assert n == 1


# --- roll ---

ROLLS = [(1, 0), (-1, 0), (7, 1), (-13, -1), (5, 2), (0, 1), ((1, 2), (0, 1)),
         ((1, 1), (0, 0)), ((2, -3, 1), (0, 1, 2)), ((4, 0), (2, 1)), (3, ()), (-5, ()),
         (0, ()), (1000, ()), (2**62 + 1, 1), (-2**62, ())]
ROLLS_SHORT = [(-13, -1), ((1, 2), (0, 1)), (3, ())]  # for dtypes other than float32


@pytest.mark.parametrize("dtype,kind", CASES, ids=str)
def test_roll(dtype, kind):
    c, l = pair((3, 4, 5), dtype, kind)
    for shifts, dims in ROLLS if dtype == torch.float32 else ROLLS_SHORT:
        check(lambda x: torch.roll(x, shifts, dims), (c,), (l,))


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,), (6,), (2, 1, 3)])
def test_roll_edge_shapes(shape):
    c, l = pair(shape)
    for shifts, dims in [(1, ()), (-2, ()), ((1, 1), (0, -1)), (2, 0)]:
        check(lambda x: torch.roll(x, shifts, dims), (c,), (l,))
    check(lambda x: x.t().roll(1, 0) if x.dim() == 2 else x, (c,), (l,))
    check(lambda x: x.t().roll(1) if x.dim() == 2 else x, (c,), (l,))


def test_roll_layouts_as_cpu():
    c, l = pair((2, 3, 4, 5))
    c, l = c.to(memory_format=torch.channels_last), l.to(memory_format=torch.channels_last)
    for shifts, dims in [(1, 1), ((1, 2), (1, 3)), (0, 1), (-7, 1), (3, ()), ((1, 0), (3, 1))]:
        check(lambda x: x.roll(shifts, dims), (c,), (l,))
    check(lambda x: x.permute(3, 2, 1, 0).roll(1, 1), (c,), (l,))
    check(lambda x: x[:, :, :0].roll(1, 1), (c,), (l,))
    check(lambda x: x.expand(2, 2, 3, 4, 5).roll((1, 1), (0, 4)), (c,), (l,))
    check(lambda x: torch.ops.aten.roll.out(x, (1,), (2,), out=torch.empty(0, device=x.device)),
          (c,), (l,))


def test_roll_errors():
    x = sample((3, 4), torch.float32)
    check_errors(lambda t: t.roll((), ()), x)
    check_errors(lambda t: t.roll((1, 2)), x)
    check_errors(lambda t: t.roll((1, 2), (0,)), x)
    check_errors(lambda t: t.roll(1, 2), x)
    check_errors(lambda t: t.roll((1, 1), (0, -3)), x)
    check_errors(lambda t: t.roll(1, 0), torch.tensor(1.0))


def test_roll_kernels():
    x = sample((6, 8), torch.float32).to(D)
    assert kernels(lambda t: t.roll(0, 0) + 1, x) == 1  # a zero shift is one piece
    assert kernels(lambda t: t.roll(2, 0), x) == 2  # one store per piece
    assert kernels(lambda t: t.roll((2, 3), (0, 1)), x) == 4
    assert kernels(lambda t: t.roll(3), x) == 2  # contiguous: flattened in place


# --- tril / triu ---

DIAGONALS = [-10, -2, -1, 0, 1, 3, 10]


@pytest.mark.parametrize("dtype,kind", CASES, ids=str)
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tri(op, dtype, kind):
    c, l = pair((2, 4, 6), dtype, kind)
    for k in DIAGONALS if dtype == torch.float32 else [-1, 0, 1]:
        check(lambda x: getattr(torch, op)(x, k), (c,), (l,))
    check(lambda x: getattr(x[0], op)(), (c,), (l,))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tri_inplace_and_out(op):
    i32 = dict(dtype=torch.int32)
    outs = [lambda d: torch.empty(0, device=d, **i32),
            lambda d: torch.full((2, 7, 5), 3, device=d, **i32).transpose(1, 2),
            lambda d: torch.full((2, 5, 7), 3, device=d, **i32),
            lambda d: torch.empty(3, device=d, **i32)]
    for k in [-1, 0, 2]:
        c, l = pair((5, 7), torch.float64)
        getattr(c[1::2, 1:], op + "_")(k)
        getattr(l[1::2, 1:], op + "_")(k)
        compare(l, c)
        c, l = pair((2, 5, 7), torch.int32, "transposed")
        check(lambda x: getattr(x, op + "_")(k), (c,), (l,))
        for make in outs:
            out_c, out_l = make("cpu"), make(D)
            r = getattr(torch, op)(l, k, out=out_l)
            want = getattr(torch, op)(c, k, out=out_c)
            assert r is out_l
            compare(out_l, want)


def test_tri_out_as_input():
    for op in ["tril", "triu"]:
        c, l = pair((4, 6))
        getattr(torch, op)(c, 1, out=c)
        getattr(torch, op)(l, 1, out=l)
        compare(l, c)


def test_tri_edge_shapes():
    for shape in [(0, 3), (3, 0), (2, 0, 4), (1, 1), (0,)]:
        c, l = pair(shape)
        for op in ["tril", "triu"]:
            check(lambda x: getattr(torch, op)(x, 1), (c,), (l,))


def test_tri_errors():
    for op in ["tril", "triu"]:
        check_errors(lambda t: getattr(torch, op)(t), torch.zeros(3))
        check_errors(lambda t: getattr(torch, op)(t), torch.tensor(1.0))
        check_errors(lambda t: getattr(t, op + "_")(), torch.zeros(3))
        x = torch.zeros(3, 3)
        check_errors(lambda t: getattr(torch, op)(t, out=torch.empty(0, dtype=torch.int64,
                                                                      device=t.device)), x)


def test_tri_kernels():
    x = sample((6, 8), torch.float32).to(D)
    assert kernels(lambda t: t.tril() + 1, x) == 1
    assert kernels(lambda t: (t * 2).triu(1) + 1, x) == 1
    y = sample((6, 8), torch.float32).to(D)
    loom.sync()
    loom.reset_metrics()
    blocks = loom.metrics()["live_blocks"]
    y.tril_(-1)
    y.cpu()
    m = loom.metrics()
    assert m["kernels_run"] == 1 and m["live_blocks"] == blocks  # in place, no copy


# --- diag ---


@pytest.mark.parametrize("dtype,kind", CASES, ids=str)
def test_diag_of_matrix(dtype, kind):
    c, l = pair((4, 6), dtype, kind)
    for k in [-4, -3, -1, 0, 2, 5, 6]:
        check_half_gap(lambda x: torch.diag(x, k), c, l)


@pytest.mark.parametrize("dtype", DTYPES)
def test_diag_of_vector(dtype):
    c, l = pair((9,), dtype, "sliced")
    for k in [-3, -1, 0, 2]:
        check_half_gap(lambda x: torch.diag(x, k), c, l)
    c, l = pair((0,), dtype)
    for k in [0, 2]:
        check_half_gap(lambda x: torch.diag(x, k), c, l)


def check_half_gap(fn, c, l):
    """CPU 1.13 has no Half kernel for diag (CUDA has): Loom computes it; compare with the
    float32 result converted."""
    if c.dtype == torch.float16:
        want = fn(c.float()).half()
        compare(fn(l), want)
    else:
        check(fn, (c,), (l,))


def test_diag_out():
    c, l = pair((5,), torch.float64)
    for out_c in [torch.empty(0, dtype=torch.float64), torch.ones(5, 5, dtype=torch.float64),
                  torch.ones(5, 5, dtype=torch.float64).t(), torch.ones(2, dtype=torch.float64)]:
        out_l = out_c.t().to(D).t() if out_c.dim() == 2 else out_c.to(D)
        r = torch.diag(l, 0, out=out_l)
        assert r is out_l
        compare(out_l, torch.diag(c, 0, out=out_c))
    c, l = pair((4, 3), torch.int64, "transposed")
    out_c = torch.zeros(9, dtype=torch.int64)
    out_c, out_l = out_c[::3], out_c.to(D)[::3]  # the right size: written through its stride
    torch.diag(c, -1, out=out_c)
    torch.diag(l, -1, out=out_l)
    compare(out_l, out_c)


def test_diag_errors():
    check_errors(lambda t: torch.diag(t), torch.zeros(2, 2, 2))
    check_errors(lambda t: torch.diag(t), torch.tensor(1.0))
    c, l = pair((2, 3))
    for k in (5, -3):  # past the matrix: 1.13's CPU raises, 2.x's returns an empty diagonal
        check(lambda x: torch.diag(x, k), (c,), (l,))
    for shape in [(3,), (3, 3)]:
        check_errors(lambda t: torch.diag(t, out=torch.empty(0, dtype=torch.int64,
                                                              device=t.device)), torch.zeros(shape))
        check_errors(lambda t: torch.diag(t, out=torch.empty(0, dtype=torch.float64,
                                                              device=t.device)), torch.zeros(shape))


def test_diag_scenario():
    # from the views issue: a value read by diag on a fresh tensor
    got = torch.diag(torch.tensor([1.0, 2.0, 3.0], device=D))
    compare(got, torch.diag(torch.tensor([1.0, 2.0, 3.0])))


def test_diag_kernels():
    m = sample((6, 8), torch.float32).to(D)
    v = sample((5,), torch.float32).to(D)
    assert kernels(lambda t: t.diag(1) + 1, m) == 1  # a strided load
    assert kernels(lambda t: t.diag() + 1, v) == 1  # where(i == j, v[i], 0)
    assert kernels(lambda t: t.diag(2), v) == 1  # zeros, then the diagonal: one batched kernel


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (0, 0, 2), (1, 2, 0), (-2, 1, 2),
                                              (3, 0, 1)])
@pytest.mark.parametrize("kind", ["contiguous", "transposed"])
def test_diag_embed(offset, dim1, dim2, kind):
    c, l = pair((3, 4), torch.float32, kind)
    check(lambda x: torch.diag_embed(x, offset, dim1, dim2), (c,), (l,))
    check(lambda x: torch.diag_embed(x[:0], offset, dim1, dim2), (c,), (l,))
    c, l = pair((4,), torch.int64)
    check(lambda x: torch.diag_embed(x, offset, 0, 1), (c,), (l,))
    w = sample((3, 4), torch.float32).to(D)
    # one store on the main diagonal (fused into its consumer), zeros then the diagonal off it
    assert kernels(lambda t: torch.diag_embed(t, offset, dim1, dim2) + 1, w) == (
        1 if offset == 0 else 2)


def test_diag_embed_errors():
    check_errors(lambda t: torch.diag_embed(t, 0, 1, 1), torch.zeros(2, 3))
    check_errors(lambda t: torch.diag_embed(t, 0, 0, 3), torch.zeros(2, 3))


# --- trace ---


@pytest.mark.parametrize("dtype,kind", CASES, ids=str)
def test_trace(dtype, kind):
    c, l = pair((5, 4), dtype, kind)
    if dtype in REDUCED:  # CPU has no Half/BFloat16 trace; CUDA's accumulates in float
        compare(torch.trace(l), torch.trace(c.float()).to(dtype), exact=False)
        return
    check(torch.trace, (c,), (l,), exact=not dtype.is_floating_point)


def test_trace_edge_and_errors():
    for shape in [(0, 3), (1, 1), (3, 0)]:
        c, l = pair(shape)
        check(torch.trace, (c,), (l,))
    check_errors(torch.trace, torch.zeros(2, 2, 2))
    check_errors(torch.trace, torch.zeros(3))
    check_errors(torch.trace, torch.zeros(3, 3, dtype=torch.bool))
    x = sample((4, 4), torch.float32).to(D)
    assert kernels(torch.trace, x) == 1


# --- cat / stack ---

CAT_DTYPES = [(torch.float32, torch.float32), (torch.float32, torch.int64),
              (torch.int32, torch.bool), (torch.int64, torch.int32), (torch.bool, torch.bool),
              (torch.float16, torch.float32), (torch.bfloat16, torch.float16),
              (torch.float64, torch.float16), (torch.bfloat16, torch.bfloat16)]


@pytest.mark.parametrize("dtypes,kind", [(d, "contiguous") for d in CAT_DTYPES] + [
    (d, k) for k in ("transposed", "sliced") for d in CAT_DTYPES[:3]], ids=str)
def test_cat(dtypes, kind):
    a_c, a_l = pair((3, 4, 5), dtypes[0], kind, seed=1)
    b_c, b_l = pair((3, 4, 5), dtypes[1], kind, seed=2)
    for dim in [0, 1, 2, -1] if dtypes == CAT_DTYPES[0] else [1]:
        check(lambda x, y: torch.cat([x, y], dim), (a_c, b_c), (a_l, b_l))
        check(lambda x, y: torch.cat([x, y, x], dim), (a_c, b_c), (a_l, b_l))
    # unequal sizes along the cat dim (one store per input)
    check(lambda x, y: torch.cat([x[:1], y, x[1:, :, :]], 0), (a_c, b_c), (a_l, b_l))
    check(lambda x, y: torch.cat([x[:, :3], y], 1), (a_c, b_c), (a_l, b_l))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9])
def test_cat_many(n):
    cs, ls = zip(*[pair((2, 3), torch.float32, ["contiguous", "transposed", "sliced"][i % 3],
                        seed=i) for i in range(n)])
    for dim in [0, 1]:
        check(lambda *xs: torch.cat(xs, dim), cs, ls)
        check(lambda *xs: torch.cat([x[:, : 1 + i % 3] for i, x in enumerate(xs)], 1), cs, ls)
        check(lambda *xs: torch.stack(xs, dim), cs, ls)
        check(lambda *xs: torch.stack(xs, 2), cs, ls)


def test_cat_empty_inputs():
    a_c, a_l = pair((2, 3))
    e_c, e_l = torch.tensor([]), torch.tensor([]).to(D)
    check(lambda a, e: torch.cat([a, e]), (a_c, e_c), (a_l, e_l))  # legacy empty: skipped
    check(lambda a, e: torch.cat([e, a, e], 1), (a_c, e_c), (a_l, e_l))
    check(lambda a, e: torch.cat([e, e]), (a_c, e_c), (a_l, e_l))
    check(lambda a, e: torch.cat([a[:, :0], a, a[:, 1:1]], 1), (a_c, e_c), (a_l, e_l))
    check(lambda a, e: torch.cat([a[:0], a[:0]], 1), (a_c, e_c), (a_l, e_l))
    check(lambda a, e: torch.cat([e.long(), a]), (a_c, e_c), (a_l, e_l))  # promotes


def test_cat_memory_format():
    c, l = pair((2, 3, 4, 5))
    cl = (c.to(memory_format=torch.channels_last), l.to(memory_format=torch.channels_last))
    for dim in [0, 1, 2, 3]:
        check(lambda x: torch.cat([x, x], dim), cl[:1], cl[1:])
        check(lambda x, y: torch.cat([x, y], dim), (cl[0], c), (cl[1], l))
        check(lambda x: torch.cat([x, x[:, :, :1]], 2), cl[:1], cl[1:])
    check(lambda x: torch.cat([x.t(), x.t()], 1), (c[0, 0],), (l[0, 0],))


def test_cat_out():
    a_c, a_l = pair((2, 3), seed=1)
    b_c, b_l = pair((2, 3), torch.int64, seed=2)
    outs = [lambda d: torch.empty(0, device=d), lambda d: torch.zeros(4, 3, device=d),
            lambda d: torch.zeros(3, 4, device=d).t(), lambda d: torch.zeros(4, 3, device=d,
                                                                             dtype=torch.float64),
            lambda d: torch.zeros(5, 5, device=d)[1:, 1:4], lambda d: torch.zeros(7, device=d)]
    for make in outs:
        out_c, out_l = make("cpu"), make(D)
        got = torch.cat([a_l, b_l], out=out_l)
        want = torch.cat([a_c, b_c], out=out_c)
        assert got is out_l
        compare(out_l, want)
    # out shares a storage with an input it does not overlap
    base_c, base_l = torch.zeros(10, 3), torch.zeros(10, 3).to(D)
    base_c[:2], base_l[:2] = a_c, a_l
    torch.cat([base_c[:2], b_c], out=base_c[4:8])
    torch.cat([base_l[:2], b_l], out=base_l[4:8])
    compare(base_l, base_c)
    # stack.out is cat.out
    out_c, out_l = torch.empty(0), torch.empty(0, device=D)
    torch.stack([a_c, a_c], 1, out=out_c)
    torch.stack([a_l, a_l], 1, out=out_l)
    compare(out_l, out_c)


def test_cat_errors():
    a = sample((2, 3), torch.float32)
    check_errors(lambda x: torch.cat([]), a)
    check_errors(lambda x: torch.cat([x[0, 0], x[0, 0]]), a)
    check_errors(lambda x: torch.cat([x, x.t()]), a)
    check_errors(lambda x: torch.cat([x, x[0]]), a)
    check_errors(lambda x: torch.cat([x, x], 2), a)
    check_errors(lambda x: torch.cat([x, x], -3), a)
    check_errors(lambda x: torch.cat([x, x], out=x), a)  # out overlaps an input
    check_errors(lambda x: torch.cat([x, x], out=torch.empty(0, dtype=torch.int64,
                                                            device=x.device)), a)
    check_errors(lambda x: torch.stack([x, x.t()]), a)
    check_errors(lambda x: torch.stack([x, x], 3), a)
    with pytest.raises(RuntimeError):
        torch.cat([a.to(D), a])
    with pytest.raises(RuntimeError):
        torch.cat([a, a.to(D)])


def test_cat_kernels():
    a, b = (sample((6, 8), torch.float32, seed=s).to(D) for s in (1, 2))
    c = sample((3, 8), torch.float32).to(D)
    assert kernels(lambda: torch.cat([a, b])) == 1  # one where-chain store
    assert kernels(lambda: torch.cat([a * 2, b + 1], 1)) == 1
    assert kernels(lambda: torch.cat([a, b]).sum()) == 2
    assert kernels(lambda: torch.cat([a, c]).sum()) == 3  # one store per input, then sum
    assert kernels(lambda: torch.stack([a, b]).sum()) == 1  # read through stack's view
    assert kernels(lambda: torch.stack([a, b, a], 2) + 1) == 1
    assert kernels(lambda: torch.cat([a] * 6)) == 1  # six stores differing in offsets: one batch


# --- composites that must run on Loom through the ops above ---

COMPOSITES = {
    "diag_embed": lambda x: torch.diag_embed(x),
    "diag_embed_offset": lambda x: torch.diag_embed(x, -1, 0, 2),
    "diagflat": lambda x: torch.diagflat(x[0], 1),
    "repeat": lambda x: x.repeat(2, 1, 3),
    "tile": lambda x: x.tile((2,)),
    "narrow_copy": lambda x: x.narrow_copy(1, 1, 2),
    "narrow_copy_out": lambda x: torch.narrow_copy(x, -1, 1, 3,
                                                   out=torch.empty(0, device=x.device)),
    "hstack": lambda x: torch.hstack([x, x]),
    "vstack": lambda x: torch.vstack([x, x[:1]]),
    "dstack": lambda x: torch.dstack([x, x]),
    "column_stack": lambda x: torch.column_stack([x[0], x[1]]),
    "block_diag": lambda x: torch.block_diag(x[0], x[1, :2]),
    "pad_constant": lambda x: F.pad(x, (1, 2, 0, 1), value=3.0),
    "pad_circular": lambda x: F.pad(x[None], (2, 1, 1, 0), mode="circular"),
    "chunk_cat": lambda x: torch.cat(x.chunk(2, 2)[::-1], 2),
    "rot90_2": lambda x: torch.rot90(x, 2, (1, 2)),
    "tril_mask": lambda x: torch.where(torch.ones(4, 5, device=x.device).tril() == 0, x, -x),
}


@pytest.mark.parametrize("name", COMPOSITES)
def test_composites(name):
    c, l = pair((3, 4, 5), torch.float32, "sliced")
    compare(COMPOSITES[name](l), COMPOSITES[name](c))


def test_narrow_copy_out_errors():
    x = sample((2, 3), torch.float32)

    def nc(t, *args, dtype=torch.float32):
        return torch.narrow_copy(t, *args, out=torch.empty(0, dtype=dtype, device=t.device))

    for args in [(0, 2, 1), (0, -3, 1), (0, 1, -1), (2, 0, 1), (-3, 0, 1)]:
        check_errors(lambda t: nc(t, *args), x)
    check_errors(lambda t: nc(t, 0, 0, 1, dtype=torch.int64), x)
    check_errors(lambda t: nc(t, 0, 0, 1), torch.tensor(1.0))
    c, l = pair((4, 3), kind="transposed")
    check(lambda t: nc(t, 0, -1, 1), (c,), (l,))
    check(lambda t: nc(t, 1, 3, 0), (c,), (l,))


# --- autograd through the ops ---

GRADS = {
    "cat": lambda x: torch.cat([x, x * 2], 1),
    "stack": lambda x: torch.stack([x, x.flip(0)], 2),
    "flip": lambda x: x.flip(0, 1),
    "roll": lambda x: x.roll((1, -2), (0, 1)),
    "tril": lambda x: x.tril(1),
    "triu": lambda x: x.triu(-1),
    "diag": lambda x: torch.diag(x, 1),
    "diag_vec": lambda x: torch.diag(x[0], -1),
    "trace": lambda x: torch.trace(x)[None],
}


@pytest.mark.parametrize("name", GRADS)
def test_backward(name):
    c = sample((4, 5), torch.float64).requires_grad_()
    l = c.detach().to(D).requires_grad_()
    out_c, out_l = GRADS[name](c), GRADS[name](l)
    w = sample(tuple(out_c.shape), torch.float64, seed=3)
    (out_c * w).sum().backward()
    (out_l * w.to(D)).sum().backward()
    compare(out_l.detach(), out_c.detach())
    compare(l.grad, c.grad)


# --- random chains of the ops over random views, against CPU ---


def random_view(rng, c, l):
    for _ in range(rng.randint(0, 2)):
        kind, d = rng.choice(["t", "slice", "expand", "permute"]), rng.randrange(c.dim())
        if kind == "t" and c.dim() >= 2:
            e = rng.randrange(c.dim())
            c, l = c.transpose(d, e), l.transpose(d, e)
        elif kind == "slice" and c.shape[d] >= 2:
            a, step = rng.randint(0, c.shape[d] - 1), rng.randint(1, 2)
            index = (slice(None),) * d + (slice(a, None, step),)
            c, l = c[index], l[index]
        elif kind == "expand" and c.shape[d] >= 1:
            c, l = (t.narrow(d, 0, 1).expand(*t.shape) for t in (c, l))
        elif kind == "permute":
            p = list(range(c.dim()))
            rng.shuffle(p)
            c, l = c.permute(p), l.permute(p)
    return c, l


def random_op(rng, x):
    nd, k = x.dim(), rng.choice(["flip", "roll", "roll_flat", "tri", "cat", "stack", "diag"])
    if k == "flip":
        dims = tuple(rng.sample(range(nd), rng.randint(0, nd)))
        return lambda t: t.flip(dims)
    if k == "roll":
        n = rng.randint(1, 3)
        dims = tuple(rng.randrange(-nd, nd) for _ in range(n))
        shifts = tuple(rng.randint(-7, 7) for _ in range(n))
        return lambda t: t.roll(shifts, dims)
    if k == "roll_flat":
        shift = rng.randint(-20, 20)
        return lambda t: t.roll(shift)
    if k == "tri" and nd >= 2:
        op, diagonal = rng.choice(["tril", "triu"]), rng.randint(-4, 4)
        return lambda t: getattr(t, op)(diagonal)
    if k == "cat":
        d = rng.randrange(-nd, nd)
        cuts = [rng.randint(0, x.shape[d]) for _ in range(rng.randint(1, 5))]
        return lambda t: torch.cat([t.narrow(d, 0, n) for n in cuts] + [t], d)
    if k == "stack":
        d, n = rng.randint(-nd - 1, nd), rng.randint(1, 6)
        return lambda t: torch.stack([t] * n, d)
    if k == "diag" and nd <= 2 and x.dtype != torch.float16:
        offset = rng.randint(-3, 3)
        if nd == 1 or -x.shape[0] <= offset <= x.shape[1]:
            return lambda t: torch.diag(t, offset)
    return lambda t: t + t


@pytest.mark.parametrize("seed", range(40))
def test_random_programs(seed):
    rng = random.Random(seed)
    shape = tuple(rng.randint(1, 5) for _ in range(rng.randint(1, 4)))
    dtype = rng.choice([torch.float32, torch.int64, torch.bool, torch.float16, torch.int32])
    base = sample(shape, dtype, seed)
    c, l = random_view(rng, base, base.to(D))
    for _ in range(rng.randint(1, 3)):
        fn = random_op(rng, c)
        c, l = fn(c), fn(l)
        if rng.random() < 0.3:
            c, l = random_view(rng, c, l)
    compare(l, c)


@pytest.mark.parametrize("fn, factor, shape", [(F.pixel_shuffle, 2, (2, 8, 3, 3)),
                                               (F.pixel_unshuffle, 2, (1, 2, 3, 4, 6))])
def test_pixel_shuffle_layout_as_cpu(fn, factor, shape):
    # The CPU writes a new tensor in the input's memory format, also for an expanded input
    # that the composite version would return as a (stride-0) view.
    x = sample(shape, torch.float32)
    inputs = [x, x.transpose(-1, -2), torch.ones(()).expand(shape)]
    if len(shape) == 4:
        inputs.append(x.contiguous(memory_format=torch.channels_last))
    for t in inputs:
        want, got = fn(t, factor), fn(t.to(D), factor)
        assert got.stride() == want.stride() and got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want)
    with pytest.raises(RuntimeError):
        fn(x[..., :3].to(D), 4)


def test_pixel_shuffle_backward():
    x = sample((1, 9, 2, 2), torch.float32)
    grads = []
    for dev in ("cpu", D):
        t = x.to(dev).requires_grad_()
        (g,) = torch.autograd.grad(F.pixel_shuffle(t, 3).sum(), [t])
        grads.append(g)
    assert grads[1].stride() == grads[0].stride()
    torch.testing.assert_close(grads[1].cpu(), grads[0])
