"""Advanced indexing, gather/scatter and the index_* ops against CPU torch: values, dtype,
sizes, strides, exception types, zero fallbacks, and faults found inside kernels."""
import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import raises_like_cpu
from kernel_text import kernel_sources

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.float16, torch.bfloat16]


class Env:
    """Makes tensors on one device, so one program runs on CPU and on Loom."""

    def __init__(self, device):
        self.device = device

    def i(self, v):
        return torch.tensor(v, dtype=torch.long, device=self.device)

    def b(self, v):
        return torch.tensor(v, dtype=torch.bool, device=self.device)

    def t(self, v, dtype=torch.float32):
        return torch.tensor(v, dtype=dtype, device=self.device)



def computed_index(values):
    """An int64 Loom index whose values come out of float arithmetic (plus one), which the
    host does not follow: they are known only when a kernel runs."""
    return (torch.tensor(values, dtype=torch.float32, device=loom.device) + 1).long()

def base(dtype):
    return (torch.arange(24, dtype=torch.float64) - 7).view(4, 6).to(dtype)


def run(fn, x, env):
    try:
        r = fn(x, env)
        if isinstance(r, torch.Tensor):
            return r, r.cpu()
        return r, r
    except Exception as e:  # noqa: BLE001 (compared by type below)
        return e, e


def check_same(fn, dtype=torch.float32, layout=lambda t: t):
    cpu_x = layout(base(dtype).clone())
    loom_x = layout(base(dtype).to(loom.device))
    loom.reset_metrics()
    want, want_v = run(fn, cpu_x, Env("cpu"))
    got, got_v = run(fn, loom_x, Env(loom.device))
    if isinstance(want, Exception):
        assert isinstance(got, Exception), f"CPU raised {want!r}, Loom gave {got_v}"
        assert type(got) is type(want), f"CPU raised {want!r}, Loom raised {got!r}"
        return
    assert not isinstance(got, Exception), f"Loom raised {got!r}"
    assert got.device == loom.device
    assert got_v.dtype == want_v.dtype
    assert got_v.shape == want_v.shape
    assert got.stride() == want.stride(), (got.stride(), want.stride())
    torch.testing.assert_close(got_v, want_v, rtol=0, atol=0, equal_nan=True)
    # The input (written in place by some ops) must match as well.
    torch.testing.assert_close(loom_x.cpu(), cpu_x, rtol=0, atol=0, equal_nan=True)
    assert loom.metrics()["fallbacks"] == {}


def setitem(key, value):
    def f(t, e):
        t[key(e) if callable(key) else key] = value(e) if callable(value) else value
        return t

    return f


READS = {
    "index_rows": lambda t, e: t[e.i([0, 2, -1])],
    "index_cols": lambda t, e: t[:, e.i([[0, 2], [1, 1]])],
    "index_pair": lambda t, e: t[e.i([0, 2]), e.i([1, 5])],
    "index_broadcast": lambda t, e: t[e.i([[0], [3]]), e.i([1, 5, 0])],
    "index_nonadjacent": lambda t, e: t.view(2, 2, 6)[e.i([0, 1]), :, e.i([1, 5])],
    "index_adjacent_mid": lambda t, e: t.view(2, 2, 6)[:, e.i([1, 0]), e.i([1, 5])],
    "index_ellipsis": lambda t, e: t.view(2, 2, 6)[..., e.i([3])],
    "index_none": lambda t, e: t[None, e.i([1])],
    "index_mask": lambda t, e: t[t > 3],
    "index_mask_rows": lambda t, e: t[e.b([True, False, True, True])],
    "index_mask_and_int": lambda t, e: t[e.b([True, False, True, True]), e.i([0, 1, 5])],
    "index_cpu_indices": lambda t, e: t[torch.tensor([1, 3])],
    "index_empty": lambda t, e: t[e.i([])],
    "index_oob": lambda t, e: t[e.i([0, 4])],
    "index_oob_neg": lambda t, e: t[:, e.i([-7])],
    "index_float_index": lambda t, e: t[e.t([0.0])],
    "index_too_many": lambda t, e: t[e.i([0]), e.i([0]), e.i([0])],
    "index_mask_shape": lambda t, e: t[e.b([True, False, True])],
    "take": lambda t, e: t.take(e.i([[0, 5], [-1, 23]])),
    "take_oob": lambda t, e: t.take(e.i([24])),
    "take_int32": lambda t, e: t.take(e.i([1]).int()),
    "index_select_0": lambda t, e: t.index_select(0, e.i([3, 0, 0])),
    "index_select_1": lambda t, e: t.index_select(1, e.i([3, 1])),
    "index_select_int32": lambda t, e: t.index_select(1, e.i([5, 1]).int()),
    "index_select_2d_index": lambda t, e: t.index_select(0, e.i([[0]])),
    "index_select_oob": lambda t, e: t.index_select(0, e.i([4])),
    "gather_1": lambda t, e: t.gather(1, e.i([[0, 1], [3, 3], [2, 0]])),
    "gather_0": lambda t, e: t.gather(0, e.i([[0, 1, 3], [3, 3, 3]])),
    "gather_oob": lambda t, e: t.gather(1, e.i([[0, 6]])),
    "gather_neg": lambda t, e: t.gather(1, e.i([[-1]])),
    "gather_int32": lambda t, e: t.gather(1, e.i([[0]]).int()),
    "nonzero": lambda t, e: t.nonzero(),
    "nonzero_0d": lambda t, e: t[1, 1].nonzero(),
    "masked_select": lambda t, e: t.masked_select(e.b([True, False, False, True, True, False])),
    "masked_select_byte": lambda t, e: t.masked_select(e.b([True] * 6).byte()),
    "embedding": lambda t, e: torch.nn.functional.embedding(e.i([[1, 3], [0, 0]]), t),
    "embedding_oob": lambda t, e: torch.nn.functional.embedding(e.i([4]), t),
}

WRITES = {
    "setitem_int_index": setitem(lambda e: e.i([0, 2]), 5),
    "setitem_index_tensor_value": setitem(lambda e: e.i([0, 2]), lambda e: e.t([1, 2, 3, 4, 5, 6])),
    "setitem_pair": setitem(lambda e: (e.i([0, 3]), e.i([5, 0])), -1),
    "setitem_mask": setitem(lambda e: None, None),
    "setitem_rows_mask": setitem(lambda e: e.b([True, False, False, True]), 9),
    "setitem_index_slice": setitem(lambda e: (e.i([1, 3]), slice(None, 3)), 2),
    "setitem_oob": setitem(lambda e: e.i([0, 9]), 1),
    "index_put_acc_dup": lambda t, e: t.index_put_((e.i([0, 0, 2]),), e.t([1, 1, 1, 1, 1, 1]).to(t.dtype), accumulate=True),
    "index_put_acc_pair": lambda t, e: t.index_put_((e.i([0, 0]), e.i([1, 1])), e.t(2).to(t.dtype), accumulate=True),
    "index_put_dtype": lambda t, e: t.index_put_((e.i([0]),), e.t(1, torch.float64 if t.dtype != torch.float64 else torch.float32)),
    "index_put_shape": lambda t, e: t.index_put_((e.i([0, 1]),), e.t([1, 2, 3]).to(t.dtype)),
    "put_": lambda t, e: t.put_(e.i([0, 5, 7]), e.t([1, 2, 3]).to(t.dtype)),
    "put_acc": lambda t, e: t.put_(e.i([0, 0, -1]), e.t([1, 2, 3]).to(t.dtype), accumulate=True),
    "put_oob": lambda t, e: t.put_(e.i([24]), e.t([1]).to(t.dtype)),
    "masked_fill": lambda t, e: t.masked_fill_(t > 2, -2),
    "masked_fill_bcast": lambda t, e: t.masked_fill_(e.b([True, False, True, False, False, True]), 4),
    "masked_fill_tensor": lambda t, e: t.masked_fill_(t < 0, e.t(3).to(t.dtype)),
    "masked_fill_tensor_1d": lambda t, e: t.masked_fill_(t < 0, e.t([3]).to(t.dtype)),
    "masked_fill_fn": lambda t, e: t.masked_fill(t < 0, 1),
    "scatter_src": lambda t, e: t.scatter(1, e.i([[0, 1], [3, 3]]), t[2:] * 3),
    "scatter_value_": lambda t, e: t.scatter_(0, e.i([[0, 1], [3, 3]]), 7),
    "scatter_add_mode": lambda t, e: t.scatter(1, e.i([[0, 0], [3, 3]]), t[2:] * 3, reduce="add"),
    "scatter_multiply_value": lambda t, e: t.scatter(1, e.i([[0, 0], [3, 3]]), 2, reduce="multiply"),
    "scatter_add": lambda t, e: t.scatter_add(0, e.i([[0, 0, 1], [0, 0, 1]]), t[:2]),
    "scatter_add_oob": lambda t, e: t.scatter_add(0, e.i([[0, 9, 1]]), t[:1].clone()),
    "scatter_overlap": lambda t, e: t.scatter_add_(0, e.i([[0, 0, 1]]), t[:1]),
    "scatter_oob_": lambda t, e: t.scatter_(1, e.i([[6]]), 1),
    "index_add": lambda t, e: t.index_add(0, e.i([1, 1, 3]), t[:3], alpha=2),
    "index_add_dim1": lambda t, e: t.index_add(1, e.i([1, 1, 3]), t[:, :3]),
    "index_add_oob": lambda t, e: t.index_add(0, e.i([1, 9]), t[:2]),
    "index_copy": lambda t, e: t.index_copy(1, e.i([5, 0]), t[:, :2] * 3),
    "index_copy_oob": lambda t, e: t.index_copy(1, e.i([6, 0]), t[:, :2] * 3),
    "index_fill": lambda t, e: t.index_fill(1, e.i([5, -1, 0]), -3),
    "index_fill_tensor": lambda t, e: t.index_fill_(0, e.i([2]), e.t(9).to(t.dtype)),
    "index_fill_oob": lambda t, e: t.index_fill_(1, e.i([9]), -3),
}


def _mask_setitem(t, e):
    t[t > 4] = 0
    return t


WRITES["setitem_mask"] = _mask_setitem


@pytest.mark.parametrize("name", sorted(READS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_read(name, dtype):
    check_same(READS[name], dtype)


@pytest.mark.parametrize("name", sorted(WRITES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_write(name, dtype):
    check_same(WRITES[name], dtype)


TRANSPOSED = lambda t: t.t()  # noqa: E731
SLICED = lambda t: t[:, 1:5]  # noqa: E731


@pytest.mark.parametrize("name", ["index_rows", "index_pair", "index_mask", "take", "gather_1",
                                  "index_select_1", "nonzero"])
@pytest.mark.parametrize("layout", [TRANSPOSED, SLICED], ids=["t", "sliced"])
def test_read_layouts(name, layout):
    check_same(READS[name], torch.float32, layout)


@pytest.mark.parametrize("name", ["setitem_int_index", "setitem_mask", "index_put_acc_dup", "put_acc",
                                  "masked_fill", "scatter_value_", "index_add", "index_fill"])
@pytest.mark.parametrize("layout", [TRANSPOSED, SLICED], ids=["t", "sliced"])
def test_write_layouts(name, layout):
    check_same(WRITES[name], torch.float32, layout)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                                   torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8, torch.bool])
@pytest.mark.parametrize("shape", [(), (7,), (5, 9), (3, 4, 6), (0, 4), (4, 1, 3), (64, 300),
                                   (3, 2, 700)])
def test_nonzero_of_contiguous_tensors(dtype, shape):
    """A contiguous real tensor is scanned row by row in one typed pass (NOTE [Nonzero scan]):
    -0.0 is zero and NaN is not, as on the CPU; every rank, empty ones included."""
    g = torch.Generator().manual_seed(2)
    x = torch.randint(-2, 3, shape, generator=g).to(dtype)
    if dtype.is_floating_point and x.numel() >= 3:
        x.view(-1)[:3] = torch.tensor([-0.0, float("nan"), float("-inf")]).to(dtype)
    got = torch.nonzero(x.to(loom.device))
    want = torch.nonzero(x)
    assert got.shape == want.shape and got.stride() == want.stride()
    assert torch.equal(got.cpu(), want)
    xl = x.to(loom.device)
    torch.testing.assert_close(xl.masked_select(xl != 0).cpu(), x.masked_select(x != 0),
                               rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool, torch.uint8, torch.int8, torch.int16])
def test_dtypes(dtype):
    check_same(READS["index_pair"], dtype)
    check_same(READS["gather_1"], dtype)
    check_same(WRITES["setitem_index_tensor_value"], dtype)
    check_same(WRITES["scatter_src"], dtype)
    if dtype != torch.bool:
        check_same(WRITES["index_put_acc_dup"], dtype)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_scatter_reduce(reduce, include_self, dtype):
    check_same(lambda t, e: t.scatter_reduce(1, e.i([[0, 0, 5], [3, 3, 3]]), t[2:] * 3 - 5, reduce,
                                             include_self=include_self), dtype)
    check_same(lambda t, e: t.scatter_reduce_(0, e.i([[0, 0, 3]]), t[1:2].clone(), reduce,
                                              include_self=include_self), dtype)


def test_scatter_reduce_nan_propagates():
    def f(t, e):
        src = t[2:].clone()
        src[0, 0] = float("nan")
        return t.scatter_reduce(1, e.i([[1, 1], [0, 0]]), src, "amax")
    check_same(f)


def test_out_variants():
    check_same(lambda t, e: torch.gather(t, 1, e.i([[0, 1]]), out=torch.empty(0, device=t.device)))
    check_same(lambda t, e: torch.index_select(t, 0, e.i([1]), out=torch.empty(0, device=t.device)))
    check_same(lambda t, e: torch.take(t, e.i([1, 2]), out=torch.empty(0, device=t.device)))
    check_same(lambda t, e: torch.masked_select(t, t > 0, out=torch.empty(0, device=t.device)))
    check_same(lambda t, e: torch.nonzero(t, out=torch.empty(0, dtype=torch.long, device=t.device)))
    check_same(lambda t, e: torch.scatter(t, 0, e.i([[1]]), 5.0, out=torch.empty(4, 6, device=t.device).t().t()))
    check_same(lambda t, e: torch.index_add(t, 0, e.i([1]), t[:1], out=torch.empty(6, 4, device=t.device).t()))


def test_reads_are_lazy_and_ordered():
    x = torch.arange(6.0, device=loom.device)
    y = x[torch.tensor([0, 5], device=loom.device)]
    x.add_(10)
    assert y.tolist() == [0.0, 5.0]
    assert x.tolist() == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]


def test_aliases_see_scatter():
    x = torch.zeros(4, 4, device=loom.device)
    view = x.t()[1:]
    x.index_put_((torch.tensor([0, 1], device=loom.device), torch.tensor([1, 2], device=loom.device)),
                 torch.tensor(7.0, device=loom.device))
    want = torch.zeros(4, 4)
    want[0, 1] = want[1, 2] = 7
    assert torch.equal(view.cpu(), want.t()[1:])


def test_fault_leaves_storage_and_device_usable(fresh_metrics):
    x = torch.arange(6.0, device=loom.device)
    loom.sync()
    alias = x[2:]
    pending = computed_index([0, 8])  # known only when a kernel runs
    x.index_put_((pending,), torch.tensor(5.0, device=loom.device))
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 6"):
        x.cpu()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert alias.tolist() == [2.0, 3.0, 4.0, 5.0]
    x.index_put_((torch.tensor([1], device=loom.device),), torch.tensor(5.0, device=loom.device))
    assert x.tolist() == [0.0, 5.0, 2.0, 3.0, 4.0, 5.0]


def test_gather_fault_raises_at_sync():
    x = torch.arange(6.0, device=loom.device)
    y = x.gather(0, computed_index([6]))
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 0 with size 6"):
        loom.sync()
    del y
    loom.sync()
    assert (x + 1).tolist()[0] == 1.0


def test_scatter_fault_inside_later_writes():
    x = torch.zeros(5, device=loom.device)
    x[0] = 1
    x.scatter_(0, computed_index([8]), 3.0)
    x[1] = 2
    with pytest.raises(RuntimeError, match="index 9"):
        x.cpu()
    assert x.tolist() == [1.0, 2.0, 0.0, 0.0, 0.0]


def test_index_known_from_constants_is_checked_at_the_op(fresh_metrics):
    # NOTE [Known values]: an index built from constants (ones, arange, a scalar setitem,
    # integer arithmetic) has values that follow from its graph: an out-of-range entry
    # raises at the op, as on the CPU, with no kernel run and the index left pending.
    x = torch.zeros(5, device=loom.device)
    ind = torch.ones(20, dtype=torch.int64, device=loom.device)
    ind[-1] = 10
    stepped = torch.arange(10, device=loom.device, dtype=torch.int32) * 2 - 3
    loom.reset_metrics()
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 0 with size 5"):
        x[ind]
    with pytest.raises(IndexError, match="index 10 is out of bounds for dimension 0 with size 5"):
        x[ind] = 0
    for fn in (lambda t, i: t.index_select(0, i), lambda t, i: t.take(i.long()),
               lambda t, i: t.gather(0, i.long()), lambda t, i: F.embedding(i, t[:, None])):
        with pytest.raises(Exception) as got:
            fn(x, stepped)
        with pytest.raises(type(got.value)) as want:
            fn(torch.zeros(5), torch.arange(10, dtype=torch.int32) * 2 - 3)
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    m = loom.metrics()
    assert m["kernels_run"] == 0 and m["realizations"] == 0
    assert x.tolist() == [0.0] * 5
    # In range, the same indices read as on the CPU.
    ind[-1] = 4
    assert x.index_put((ind,), torch.tensor(3.0, device=loom.device), accumulate=True).tolist() == \
        torch.zeros(5).index_put((ind.cpu(),), torch.tensor(3.0), accumulate=True).tolist()


def test_mask_known_from_its_graph_is_read_without_realizing(fresh_metrics):
    # A loss's `~(target == ignore_index)`: the mask follows from realized targets, so
    # nonzero and masked_select read it on the host, with nothing realized and no wait for
    # the executor; masked_scatter checks its running count at the op.
    target = torch.tensor([3, -100, 1, 4, -100, 0])
    t = target.to(loom.device)
    src = torch.arange(6.0)
    s = src.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    keep = ~(t == -100)
    got = torch.nonzero(keep)
    picked = s.masked_select(keep)
    m = loom.metrics()
    assert (m["kernels_run"], m["realizations"], m["host_waits"]) == (0, 0, 0)
    want_keep = ~(target == -100)
    assert got.cpu().tolist() == torch.nonzero(want_keep).tolist()
    assert picked.cpu().tolist() == src.masked_select(want_keep).tolist()
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        torch.zeros(6, device=loom.device).masked_scatter_(keep, s[:3])
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        torch.zeros(6).masked_scatter_(want_keep, src[:3])
    filled = torch.zeros(6, device=loom.device).masked_scatter_(keep, s[2:])
    assert filled.cpu().tolist() == torch.zeros(6).masked_scatter_(want_keep, src[2:]).tolist()


def test_index_computed_from_data_is_checked_at_realization(fresh_metrics):
    # A float computation is not followed on the host: the kernel finds the bad entry.
    x = torch.zeros(5, device=loom.device)
    y = x[computed_index([1, 7])]
    with pytest.raises(IndexError, match="index 8 is out of bounds for dimension 0 with size 5"):
        y.cpu()


def test_copied_index_is_checked_at_the_op(fresh_metrics):
    # An index copied from the host is realized by the copy, so its values are known and
    # out-of-range entries raise at the op, as on the CPU; nothing ran to find them.
    x = torch.zeros(5, device=loom.device)
    before = loom.metrics()["kernels_run"]
    for bad in (5, -6):
        idx = torch.tensor([0, bad], device=loom.device)
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 0 with size 5"):
            x[idx]
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            x[idx] = 1.0
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            x[[bad]]
    assert loom.metrics()["kernels_run"] == before
    assert x.tolist() == [0.0] * 5


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "int32"])
def test_large_realized_index_reports_the_cpus_bad_entry(fresh_metrics, layout):
    # A realized index is checked a row at a time (its range first), walked in the order
    # the CPU meets its entries: memory order for advanced indexing, row-major for take,
    # gather and scatter. The entry reported is the CPU's on one thread, and nothing runs.
    # (On several threads the chunk whose error comes first wins a race: torch 2.6's
    # scatter_add_ along dim 0 reports -90 or 64 here.)
    g = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 50, (120, 400), generator=g)
    idx[97, 311], idx[98, 5], idx[30, 399], idx[31, 0] = 77, -90, 64, 51
    if layout == "transposed":
        idx = idx.t().contiguous().t()
    if layout == "int32":
        idx = idx.int()
    x, lx = torch.zeros(50), torch.zeros(50, device=loom.device)
    cases = [(lambda t, i: t[i], idx), (lambda t, i: t.take(i), idx.long()),
             (lambda t, i: t.expand(120, 50).gather(1, i), idx.long()),
             (lambda t, i: t.expand(400, 50).t().gather(0, i), idx.long() + 20),
             (lambda t, i: torch.zeros(120, 50, device=t.device).scatter_(1, i, 1.0), idx.long()),
             (lambda t, i: torch.zeros(60, 400, device=t.device).scatter_add_(0, i, i.float()), idx.long())]
    if layout == "int32":  # the ops that take int32 indices
        cases = [(lambda t, i: t.index_select(0, i), idx.flatten())]
    on_loom = [i.to(loom.device) for _, i in cases]
    loom.sync()
    before = loom.metrics()["kernels_run"]
    for (fn, i), li in zip(cases, on_loom):
        assert li.stride() == i.stride()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with pytest.raises((IndexError, RuntimeError)) as want:
                fn(x, i)
        finally:
            torch.set_num_threads(threads)
        with pytest.raises(want.type) as got:
            fn(lx, li)
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    assert loom.metrics()["kernels_run"] == before
    idx[idx >= 50] = 49
    idx[idx < 0] = 0
    assert torch.equal(lx.expand(120, 50).gather(1, idx.long().to(loom.device)).cpu(),
                       x.expand(120, 50).gather(1, idx.long()))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_scatter_report_the_cpus_first_bad_entry(dim):
    # The CPU's gather and scatter meet a contiguous index's entries row-major, whatever
    # their dim.
    idx = torch.randint(0, 6, (6, 20, 30), generator=torch.Generator().manual_seed(4))
    idx[5, 0, 0], idx[0, 19, 1], idx[3, 7, 29] = 99, 98, 97
    src = torch.zeros(6, 20, 30)
    li, ls = idx.to(loom.device), src.to(loom.device)
    for fn in (lambda s, i: s.gather(dim, i), lambda s, i: s.clone().scatter_(dim, i, 1.0)):
        with pytest.raises(RuntimeError) as want:
            fn(src, idx)
        with pytest.raises(RuntimeError) as got:
            fn(ls, li)
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


def test_large_pending_index_is_checked_by_its_kernel(fresh_metrics):
    # An index built from constants but larger than the host evaluates (4096 entries) is
    # left to the kernel's check, which raises the same error at realization.
    x = torch.zeros(5, device=loom.device)
    ind = torch.arange(5000, device=loom.device) % 5
    ind[4000] = 7
    y = x[ind]
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
        y.cpu()
    small = torch.ones(4096, dtype=torch.int64, device=loom.device)
    small[4000] = 7
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 5"):
        x[small]

def test_host_copy_replaces_whole_storage_without_a_kernel(fresh_metrics):
    # A copy that covers its whole storage (any dense layout) becomes the storage's value
    # directly; pending readers of the old value still see the old value.
    x = torch.arange(6.0, device=loom.device).reshape(2, 3)
    old = x * 2
    before = loom.metrics()["kernels_run"]
    x.copy_(torch.full((2, 3), 7.0))
    cl = torch.empty(2, 3, 4, 5, device=loom.device).to(memory_format=torch.channels_last)
    src = torch.randn(2, 3, 4, 5)
    cl.copy_(src)
    assert loom.metrics()["kernels_run"] == before
    assert cl.stride() == src.to(memory_format=torch.channels_last).stride()
    assert torch.equal(cl.cpu(), src)
    assert x.tolist() == [[7.0] * 3] * 2
    assert old.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    part = torch.zeros(4, device=loom.device)
    part[1:3].copy_(torch.tensor([1.0, 2.0]))  # a part of the storage: written by a kernel
    assert part.tolist() == [0.0, 1.0, 2.0, 0.0]


def test_index_put_is_one_kernel_and_in_place(fresh_metrics):
    x = torch.zeros(1000, device=loom.device)
    loom.sync()
    before = loom.metrics()["kernels_run"]
    idx = torch.tensor([3, 5, 7], device=loom.device)
    loom.sync()
    base_kernels = loom.metrics()["kernels_run"]
    x.index_put_((idx,), torch.tensor(1.0, device=loom.device), accumulate=True)
    x.cpu()
    assert loom.metrics()["kernels_run"] - base_kernels == 1
    assert before <= base_kernels


def test_mask_setitem_does_not_realize(fresh_metrics):
    x = torch.arange(10.0, device=loom.device)
    x[x > 4] = 0.0
    assert loom.metrics()["kernels_run"] == 0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert loom.metrics()["kernels_run"] == 1


def test_gather_fuses_with_its_index_and_consumer(fresh_metrics):
    x = torch.arange(12.0, device=loom.device).view(3, 4)
    loom.sync()
    idx = torch.tensor([[0, 3], [1, 1], [2, 0]], device=loom.device)
    loom.sync()
    loom.reset_metrics()
    y = (x.gather(1, idx * 1) * 2 + 1).sum()
    assert y.item() == ((torch.arange(12.0).view(3, 4).gather(1, torch.tensor([[0, 3], [1, 1], [2, 0]])) * 2 + 1).sum()).item()
    assert loom.metrics()["kernels_run"] == 1


SCATTER_COMPOSITES = {
    "slice_scatter": lambda t, e: torch.slice_scatter(t, t[:, :2] * 2, 1, 0, 2),
    "slice_scatter_step": lambda t, e: torch.slice_scatter(t, t[::2] + 1, 0, 0, None, 2),
    "select_scatter": lambda t, e: torch.select_scatter(t, t[0] * 3, 0, 2),
    "diagonal_scatter": lambda t, e: torch.diagonal_scatter(t, t[0, :4] - 1, 0),
    "diagonal_scatter_offset": lambda t, e: torch.diagonal_scatter(t, t[0, :4], 1),
    "as_strided_scatter": lambda t, e: torch.as_strided_scatter(t, t[0, :3] * 5, (3,), (2,), 1),
    "masked_scatter": lambda t, e: t.masked_scatter(t > 3, t * 10),
    "masked_scatter_bcast": lambda t, e: t.masked_scatter(e.b([True, False, True, True, False, True]), t[1:] * 2),
    "masked_scatter_short": lambda t, e: t.masked_scatter(t > 3, t[0] * 1),
    "masked_scatter_empty": lambda t, e: t.masked_scatter(t > 100, t[:0]),
    "masked_scatter_dtype": lambda t, e: t.masked_scatter(t > 3, t.double() if t.dtype != torch.float64 else t.float()),
}


@pytest.mark.parametrize("name", sorted(SCATTER_COMPOSITES))
def test_scatter_composites(name):
    check_same(SCATTER_COMPOSITES[name])
    check_same(SCATTER_COMPOSITES[name], torch.float32, TRANSPOSED)


@pytest.mark.parametrize("fn", [
    lambda t, e: torch.repeat_interleave(e.i([2, 0, 3])),
    lambda t, e: torch.repeat_interleave(t, e.i([1, 0, 2, 1]), dim=0),
    lambda t, e: torch.repeat_interleave(t, 2, dim=1),
    lambda t, e: t.repeat_interleave(e.i([2, 1, 0, 1, 1, 3]), 1),
    lambda t, e: torch.repeat_interleave(e.i([[1]])),
    lambda t, e: torch.repeat_interleave(e.i([-1])),
    lambda t, e: torch.repeat_interleave(e.i([2, 1]), output_size=4),
])
def test_repeat_interleave(fn):
    check_same(fn)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8])
@pytest.mark.parametrize("weights", [None, torch.float32, torch.float64, torch.int64, torch.float16])
def test_bincount(dtype, weights, fresh_metrics):
    # The bin count comes from the data (realized, as on the CPU); float weights sum in
    # float, others in double, in input order.
    x = torch.tensor([0, 3, 3, 1, 7, 3], dtype=dtype)
    w = None if weights is None else (torch.arange(6) * 0.37 + 0.1).to(weights)
    for minlength in (0, 5, 12):
        want = torch.bincount(x, w, minlength)
        got = torch.bincount(x.to(loom.device), None if w is None else w.to(loom.device), minlength)
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
    # A strided input, and an empty one (long zeros of minlength, weights or not).
    xs = torch.arange(10)[::3].to(dtype)
    assert torch.equal(torch.bincount(xs.to(loom.device)).cpu(), torch.bincount(xs))
    e = torch.tensor([], dtype=dtype)
    assert torch.equal(torch.bincount(e.to(loom.device), None if w is None else w[:0].to(loom.device), 4).cpu(),
                       torch.bincount(e, None if w is None else w[:0], 4))
    # Counted in chunks across threads (many labels, few bins) and in one pass (one label
    # far out: many bins).
    g = torch.Generator().manual_seed(5)
    big = torch.randint(0, 100, (200_000,), generator=g).to(dtype)
    wb = None if weights is None else torch.rand(200_000, generator=g).to(weights)
    for labels in (big, torch.cat([big[:1000], torch.tensor([120], dtype=dtype)])):
        wl = None if wb is None else wb[:labels.numel()]
        want = torch.bincount(labels, wl, 3)
        got = torch.bincount(labels.to(loom.device), None if wl is None else wl.to(loom.device), 3)
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want)
    assert fresh_metrics()["fallbacks"] == {}


@pytest.mark.parametrize("bad", [
    lambda d: torch.bincount(torch.tensor([1.0, 2.0], device=d)),
    lambda d: torch.bincount(torch.tensor([True], device=d)),
    lambda d: torch.bincount(torch.tensor([-1, 2], device=d)),
    lambda d: torch.bincount(torch.tensor([[1]], device=d)),
    lambda d: torch.bincount(torch.tensor([1], device=d), minlength=-1),
    lambda d: torch.bincount(torch.tensor([1, 2], device=d), torch.ones(3, device=d)),
])
def test_bincount_errors(bad):
    raises_like_cpu(lambda: bad("cpu"), lambda: bad(loom.device))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8,
                                   torch.bfloat16, torch.float16, torch.bool, torch.complex64])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce(dtype, reduce, include_self, dim, fresh_metrics):
    # Values (integer means floor), the identity reset when self is not included, and the
    # CPU's errors for the dtypes its kernels lack; functional, in-place and out= forms.
    g = torch.Generator().manual_seed(dim * 7 + len(reduce))
    x = (torch.randn(5, 4, generator=g) * 4).to(dtype)
    src = (torch.randn(5, 6, generator=g) * 4 if dim else torch.randn(7, 4, generator=g) * 4).to(dtype)
    idx = torch.tensor([0, 2, 2, 1, 0, 3, 1][: src.shape[dim]])
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}

    def run(dev, form):
        a, i, s = x.to(dev), idx.to(dev), src.to(dev)
        if form == "fn":
            return a.index_reduce(dim, i, s, reduce, include_self=include_self)
        if form == "ip":
            return a.clone().index_reduce_(dim, i, s, reduce, include_self=include_self)
        out = torch.empty(5, 8, dtype=dtype, device=dev)[:, ::2]
        return torch.index_reduce(a, dim, i, s, reduce, include_self=include_self, out=out)

    for form in ("fn", "ip", "out"):
        try:
            want = run("cpu", form)
        except RuntimeError:
            raises_like_cpu(lambda: run("cpu", form), lambda: run(loom.device, form))
            continue
        got = run(loom.device, form).cpu()
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, equal_nan=True, **tol)
    assert fresh_metrics()["fallbacks"] == {}


def test_index_reduce_nan_and_errors():
    x = torch.tensor([1.0, float("nan"), 3.0])
    s = torch.tensor([5.0, 2.0, float("nan")])
    i = torch.tensor([0, 0, 2])
    for r in ("amax", "amin", "prod", "mean"):
        torch.testing.assert_close(x.to(loom.device).index_reduce(0, i.to(loom.device), s.to(loom.device), r).cpu(),
                                   x.index_reduce(0, i, s, r), equal_nan=True)
    for bad in (lambda d: torch.ones(3, device=d).index_reduce(0, torch.tensor([0], device=d), torch.ones(1, device=d), "sum"),
                lambda d: torch.ones(3, device=d).index_reduce(0, torch.tensor([3], device=d), torch.ones(1, device=d), "prod"),
                lambda d: torch.ones(3, device=d).index_reduce(0, torch.tensor([0.0], device=d), torch.ones(1, device=d), "prod"),
                lambda d: torch.ones(3, device=d).index_reduce(0, torch.tensor([0, 1], device=d), torch.ones(1, device=d), "prod"),
                lambda d: torch.ones(3, device=d).index_reduce(0, torch.tensor([0], device=d), torch.ones(1, dtype=torch.float64, device=d), "prod")):
        raises_like_cpu(lambda: bad("cpu"), lambda: bad(loom.device))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_realized_strided_index_checked_in_place(dtype):
    # A realized index is checked where it lies (no host copy): a transposed, stepped view,
    # in both index dtypes, names the first bad value in index order, as the CPU does.
    idx = torch.tensor([[0, 7, 2], [9, 1, -20], [3, 4, 12]], dtype=dtype)
    w = torch.randn(10, 3)

    def run(device):
        i = idx.to(device)
        if device != "cpu":
            loom.sync()
        return F.embedding(i.t()[:, ::2], w.to(device))

    raises_like_cpu(lambda: run("cpu"), lambda: run(loom.device))
    ok = idx.clamp(0, 9)
    got = F.embedding(ok.to(loom.device).t()[:, ::2], w.to(loom.device)).cpu()
    assert torch.equal(got, F.embedding(ok.t()[:, ::2], w))
    sel = torch.index_select(w.to(loom.device), 0, ok.to(loom.device).t()[1]).cpu()
    assert torch.equal(sel, torch.index_select(w, 0, ok.t()[1]))


def test_realized_strided_target_names_first_bad_value():
    idx = torch.tensor([[0, 7, 2], [9, 1, -20], [3, 4, 12]])
    logits = torch.randn(3, 5)

    def run(device):
        t = idx.to(device)
        if device != "cpu":
            loom.sync()
        return F.cross_entropy(logits.to(device), t.t()[1])  # [7, 1, 4]: 7 is named

    raises_like_cpu(lambda: run("cpu"), lambda: run(loom.device))


def test_index_select_layouts_and_errors_match_cpu():
    from cpu_errors import raises_like_cpu
    e = torch.randn(10, 4)
    i = torch.tensor([1, 3, 3])
    for fn in [lambda t, j: t.index_select(0, j), lambda t, j: t.t().index_select(1, j),
               lambda t, j: t.index_select(-1, j), lambda t, j: t.index_select(0, j[:0]),
               lambda t, j: t[0, 0].index_select(0, j[:1] * 0)]:
        want, got = fn(e, i), fn(e.to(loom.device), i.to(loom.device))
        assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride())
        torch.testing.assert_close(got.cpu(), want)
    for fn in [lambda t, j: t.index_select(2, j), lambda t, j: t.index_select(0, j.view(3, 1)),
               lambda t, j: t.index_select(0, j.float()), lambda t, j: t.index_select(0, j + 9)]:
        raises_like_cpu(lambda: fn(e, i), lambda: fn(e.to(loom.device), i.to(loom.device)).cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
def test_scatter_rows_in_lanes_keep_the_cpu_order(dtype, tmp_path):
    """A scatter whose inner loop writes a distinct element per iteration (index_add's row
    base plus the column) runs that loop as vector lanes; each element still takes its
    updates in input order: bit for bit the CPU's sums, duplicate rows included. Scatters
    whose inner index repeats (along the last dim, scatter_add along dim 1) keep one
    element at a time."""
    g = torch.Generator().manual_seed(7)
    src = (torch.randn(3000, 67, generator=g) * 100).to(dtype)
    idx = torch.randint(0, 50, (3000,), generator=g)
    base = (torch.randn(50, 67, generator=g) * 100).to(dtype)
    # float32/float64: alpha * s is added with one rounding, a fused multiply-add, on the CPU
    # and here (bfloat16 rounds the product to bfloat16 first here, as its products are).
    alpha = 3 if dtype != torch.bfloat16 else 1
    for fn in (lambda b, i, s: b.index_add_(0, i, s),
               lambda b, i, s: b.index_add_(0, i, s, alpha=alpha),
               lambda b, i, s: b.t().index_add_(1, i, s.t()),
               lambda b, i, s: b[:, :40].index_add_(1, i[:60] % 40, s[:50, :60]),
               lambda b, i, s: b.scatter_add_(1, (i[:200] % 67).view(50, 4), s[:50, :4])):
        want = fn(base.clone(), idx, src)
        got = fn(base.to(loom.device), idx.to(loom.device), src.to(loom.device)).cpu()
        assert torch.equal(got, want)
    prog = ("import torch, loom\n"
            "x = torch.zeros(8, 64, device=loom.device)\n"
            "x.index_add_(0, torch.tensor([1, 3, 1], device=loom.device),"
            " torch.ones(3, 64, device=loom.device))\n"
            "assert x.sum().item() == 192\n")
    scatter = [k for k in kernel_sources(prog, tmp_path) if "old = old +" in k]
    assert len(scatter) == 1 and "LOOM_IVDEP" in scatter[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int8,
                                   torch.bool, torch.bfloat16, torch.complex64])
def test_large_masks_compact_in_chunks(dtype):
    """x[mask] and masked_select over more than 64K elements (NOTE [Mask compaction]): the
    CPU's elements in its order, across chunk boundaries, for strided and broadcast
    operands, empty and full masks, out= and the gradient."""
    g = torch.Generator().manual_seed(11)
    base = torch.randn(300, 700, generator=g)
    x = (base * 50).to(dtype) if dtype != torch.complex64 else torch.complex(base, -base)
    mask = torch.rand(300, 700, generator=g) > 0.6
    xl, ml = x.to(loom.device), mask.to(loom.device)
    assert torch.equal(xl[ml].cpu(), x[mask])
    assert torch.equal(xl.t()[ml.t()].cpu(), x.t()[mask.t()])
    assert torch.equal(xl.masked_select(ml[:1]).cpu(), x.masked_select(mask[:1]))  # broadcast
    assert torch.equal(xl[ml & False].cpu(), x[mask & False])
    assert torch.equal(xl[ml | True].cpu(), x[mask | True])
    out = torch.empty(0, dtype=dtype, device=loom.device)
    torch.masked_select(xl, ml, out=out)
    assert torch.equal(out.cpu(), x.masked_select(mask))
    if dtype == torch.float32:
        lazy = xl * 2
        assert torch.equal(lazy[lazy > 10].cpu(), (x * 2)[(x * 2) > 10])
        w = xl.clone().requires_grad_()
        (w[ml] * 3).sum().backward()
        assert torch.equal(w.grad.cpu(), mask.float() * 3)


def test_gather_fault_late_in_a_long_index():
    """An out-of-range index at the end of a long gather raises the CPU's error (the
    vectorized run records it, the strict rerun reports it: NOTE [Deferred checks])."""
    x = torch.randn(512, 64)
    idx = torch.randint(0, 64, (512, 64))
    idx[-1, -1] = 64
    raises_like_cpu(lambda: x.gather(1, idx),
                    lambda: x.to(loom.device).gather(1, idx.to(loom.device)).cpu())
    idx[-1, -1] = -1
    raises_like_cpu(lambda: x.gather(1, idx),
                    lambda: x.to(loom.device).gather(1, idx.to(loom.device)).cpu())
    idx[-1, -1] = 63
    assert torch.equal(x.to(loom.device).gather(1, idx.to(loom.device)).cpu(), x.gather(1, idx))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_scatters_along_inner_dims_split_their_rows(dtype, tmp_path):
    """A scatter whose rows write disjoint elements (its index a row base plus a checked
    index within the row) splits its rows across threads after a check pass over all of
    them (NOTE [Parallel scatters]): the CPU's values bit for bit, duplicates included, for
    scatter_add, scatter and scatter_reduce along inner dims and gather's backward."""
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(600, 300, generator=g) * 100).to(dtype)
    idx = torch.randint(0, 300, (600, 300), generator=g)
    x3 = (torch.randn(40, 24, 30, generator=g) * 100).to(dtype)
    idx3 = torch.randint(0, 24, (40, 24, 30), generator=g)
    cases = [lambda t, i, t3, i3: torch.zeros_like(t).scatter_add_(1, i, t),
             lambda t, i, t3, i3: torch.zeros_like(t).scatter_add_(1, (i * 7 + 3) % 300, t),
             lambda t, i, t3, i3: t.clone().scatter_(1, i[:, :40], t[:, 50:90]),
             lambda t, i, t3, i3: t.clone().scatter_reduce_(1, i, t, "amax"),
             lambda t, i, t3, i3: torch.zeros_like(t3).scatter_add_(1, i3, t3),
             lambda t, i, t3, i3: torch.zeros_like(t3).scatter_add_(2, i3 % 30, t3)]
    for fn in cases:
        want = fn(x, idx, x3, idx3)
        got = fn(*(v.to(loom.device) for v in (x, idx, x3, idx3))).cpu()
        assert torch.equal(got, want)
    if dtype == torch.float64:
        w = x.clone().requires_grad_()
        wl = x.to(loom.device).requires_grad_()
        (w.gather(1, idx) * idx).sum().backward()
        (wl.gather(1, idx.to(loom.device)) * idx.to(loom.device)).sum().backward()
        torch.testing.assert_close(wl.grad.cpu(), w.grad, rtol=1e-12, atol=1e-9)
    prog = ("import torch, loom\n"
            "i = torch.randint(0, 300, (600, 300), device=loom.device)\n"
            "x = torch.ones(600, 300, device=loom.device)\n"
            "a = torch.zeros_like(x).scatter_add_(1, i, x)\n"
            "b = torch.zeros_like(x).scatter_add_(0, i % 600, x)\n"
            "assert a.sum().item() == b.sum().item() == 180000\n")
    scatters = [k for k in kernel_sources(prog, tmp_path) if "old = old +" in k]
    assert ["if (fault[2] == 0)" in k for k in scatters] == [True, False], scatters


def test_parallel_scatter_fault_writes_nothing():
    """An out-of-range index in the last rows of a scatter split across threads raises the
    CPU's error, and no row was written: every index is checked before any element is
    (NOTE [Parallel scatters])."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1024, 256, generator=g)
    idx = torch.randint(0, 256, (1024, 256), generator=g)
    xl, il = x.to(loom.device), idx.to(loom.device)
    for bad in (256, -1):
        il[1000, 17] = bad
        idx[1000, 17] = bad
        y = xl.clone()
        loom.sync()
        raises_like_cpu(lambda: x.clone().scatter_add_(1, idx, x),
                        lambda: y.scatter_add_(1, il, xl).cpu())
        assert torch.equal(y.cpu(), x)


def test_row_index_is_read_outside_the_row_loop(tmp_path):
    """index_select's row index moves with the row loop only: it is read before the loop over
    the row's elements opens (NOTE [Invariant loads]), so that the row is copied with
    contiguous vector loads rather than gathered element by element."""
    prog = ("import torch, loom\n"
            "x = torch.randn(64, 256).bfloat16()\n"
            "i = torch.tensor([5, 0, 63, 5])\n"
            "got = x.to(loom.device).index_select(0, i.to(loom.device)).cpu()\n"
            "assert torch.equal(got, x.index_select(0, i))\n")
    kernels = [k for k in kernel_sources(prog, tmp_path) if "int64_t* restrict p2" in k]
    assert len(kernels) == 1, kernels
    body = kernels[0].split("for (int64_t x0 = start; x0 < end; ++x0) {")[1]
    index_read = body.index("= p2[")
    assert index_read < body.index("for (int64_t x1 = 0;"), kernels[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_accumulated_products_round_like_cpu(dtype):
    # A product fused into a scatter-add from its producer (a weight computed as x * 1e6 and
    # never stored) is rounded before the sum, as the CPU's two kernels round it; only
    # index_add's own alpha is added with one rounding (the CPU's add with an alpha).
    g = torch.Generator().manual_seed(5)
    x = torch.rand(4000, generator=g, dtype=dtype)
    idx = torch.randint(300, (4000,), generator=g)
    base = torch.rand(300, generator=g, dtype=dtype)
    xl, il, bl = x.to(loom.device), idx.to(loom.device), base.to(loom.device)
    want = base.scatter_add(0, idx, x * 1e6)
    assert torch.equal(bl.scatter_add(0, il, xl * 1e6).cpu(), want)
    assert torch.equal(bl.index_add(0, il, xl * 1e6).cpu(), base.index_add(0, idx, x * 1e6))
    assert torch.equal(bl.index_put((il,), xl * 1e6, accumulate=True).cpu(),
                       base.index_put((idx,), x * 1e6, accumulate=True))
    # index_add's alpha: a product, then a sum, into a 1-D result (the CPU's element loop); one
    # rounding into rows (its add with an alpha).
    assert torch.equal(bl.index_add(0, il, xl, alpha=1e6).cpu(),
                       base.index_add(0, idx, x, alpha=1e6))
    rows, rows_l = base.reshape(100, 3), bl.reshape(100, 3)
    x2, i2 = x[:600].reshape(200, 3), idx[:200] % 100
    assert torch.equal(rows_l.index_add(0, i2.to(loom.device), x2.to(loom.device), alpha=1e6).cpu(),
                       rows.index_add(0, i2, x2, alpha=1e6))
    # The gradient of a gather is a scatter-add of the incoming gradient.
    src = torch.zeros(300, dtype=dtype, requires_grad=True)
    torch.gather(src, 0, idx).backward(x * 1e6)
    srcl = torch.zeros(300, dtype=dtype, device=loom.device, requires_grad=True)
    torch.gather(srcl, 0, il).backward(xl * 1e6)
    assert torch.equal(srcl.grad.cpu(), src.grad)


@pytest.mark.parametrize("op", ["index_add", "index_reduce", "index_copy"])
@pytest.mark.parametrize("self_size,source_size,dim", [
    ((3, 4, 5), (3, 4, 0), 2), ((3, 4, 5), (3, 4, 0), -1), ((3, 0, 5), (3, 0, 5), 1),
    ((5,), (0,), 0), ((0,), (0,), 0)])
def test_index_functions_with_no_indices(op, self_size, source_size, dim):
    # PyTorch's meta function selects slice 0 of the source along dim, which an empty source
    # lacks; the CPU leaves self as it is (PyTorch's test_index_reduce draws such sources).
    def run(device, source_dtype=torch.float32):
        self = torch.arange(float(torch.Size(self_size).numel()), device=device).reshape(self_size)
        index = torch.zeros(0, dtype=torch.long, device=device)
        source = torch.ones(source_size, device=device, dtype=source_dtype)
        if op == "index_add":
            return self.index_add(dim, index, source, alpha=2)
        if op == "index_reduce":
            return self.index_reduce(dim, index, source, "amax", include_self=False)
        return self.index_copy(dim, index, source)

    want, got = run("cpu"), run(loom.device)
    assert got.shape == want.shape and got.stride() == want.stride()
    assert torch.equal(got.cpu(), want)
    # The dtype checks still run.
    raises_like_cpu(lambda: run("cpu", torch.float64), lambda: run(loom.device, torch.float64))


def _with_warnings(fn):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message).split(" (Triggered internally")[0] for w in caught]


EXPANDED_WRITES = {
    "masked_fill_": lambda x, d: x.masked_fill_(torch.tensor([1, 0, 1, 1, 0, 0], device=d).bool(), 2.5),
    "masked_fill_tensor": lambda x, d: x.masked_fill_(torch.tensor([0, 0, 0, 1, 0, 0], device=d).bool(),
                                                      torch.tensor(-1.0, device=d)),
    "masked_fill_none": lambda x, d: x.masked_fill_(torch.zeros(6, device=d).bool(), 2.5),
    "index_fill_": lambda x, d: x.index_fill_(0, torch.tensor([2, 1, 0], device=d), 1.5),
    "index_put_": lambda x, d: x.index_put_((torch.tensor([2, 1, 0], device=d),),
                                            torch.tensor([1.0, 2.0, 3.0], device=d)),
    "index_put_accumulate": lambda x, d: x.index_put_((torch.tensor([2, 1, 0], device=d),),
                                                      torch.tensor([1.0, 2.0, 3.0], device=d),
                                                      accumulate=True),
    "setitem_mask": lambda x, d: x.__setitem__(torch.tensor([0, 1, 0, 0, 0, 1], device=d).bool(), 7.0),
}


@pytest.mark.parametrize("name", list(EXPANDED_WRITES))
def test_writes_through_expanded_tensors_warn_like_cpu(name):
    # The CPU takes these writes into an expanded tensor with a deprecation warning (other
    # in-place ops raise); the shared element ends as the CPU leaves it.
    def run(d):
        base = torch.tensor([4.0], device=d)
        _, warned = _with_warnings(lambda: EXPANDED_WRITES[name](base.expand(6), d))
        return base.cpu(), warned

    (want, want_warned), (got, got_warned) = run("cpu"), run(loom.device)
    assert torch.equal(got, want)
    assert got_warned == want_warned


OVERLAPPING_WRITES = {
    "masked_fill_partial": lambda d: (lambda m: m[1:].masked_fill_(m[:-1], False))(
        torch.tensor([True, False, True, True, False, False], device=d)),
    "index_put_own_element": lambda d: (lambda y: y.index_put_((torch.tensor([2, 1, 0], device=d),), y[0]))(
        torch.rand(6, device=d)),
    "index_put_own_index": lambda d: (lambda i: i.index_put_((i,), i.clone()))(torch.tensor([2, 1, 0], device=d)),
    "index_put_own_rows": lambda d: (lambda y: y.index_put_((torch.tensor([2, 1, 0], device=d),), y[:3]))(
        torch.rand(6, device=d)),
    "put_expanded": lambda d: torch.rand(1, device=d).expand(6).put_(torch.tensor([2, 1, 0], device=d),
                                                                     torch.rand(3, device=d)),
    "put_own_index": lambda d: (lambda i: i.put_(i, i.clone()))(torch.tensor([2, 1, 0], device=d)),
    "put_own_elements": lambda d: (lambda y: y.put_(torch.tensor([2, 1, 0], device=d), y[:3]))(
        torch.rand(6, device=d)),
    "index_fill_own_index": lambda d: (lambda i: i.index_fill_(0, i, 0))(torch.tensor([2, 1, 0], device=d)),
    "bernoulli_": lambda d: torch.rand(1, device=d).expand(6).bernoulli_(),
    "bernoulli_p": lambda d: torch.rand(1, device=d).expand(6).bernoulli_(0.1),
    "bernoulli_tensor": lambda d: torch.rand(1, device=d).expand(6).bernoulli_(torch.rand(6, device=d)),
    # An in-place op's overlap is checked before its dtype (a float has no shift).
    "lshift_float_overlap": lambda d: (lambda x: x[:-1].__ilshift__(x[1:]))(torch.rand(3, device=d)),
    "rshift_int_overlap": lambda d: (lambda x: x[:-1].__irshift__(x[1:]))(torch.arange(3, device=d)),
    "mul_expanded": lambda d: torch.rand(1, device=d).expand(4).mul_(torch.rand(4, device=d)),
    "masked_select_out": lambda d: (lambda y: torch.masked_select(y, y > 0.5, out=y[:2]))(
        torch.rand(6, device=d)),
}


@pytest.mark.parametrize("name", list(OVERLAPPING_WRITES))
def test_overlapping_writes_raise_like_cpu(name):
    fn = OVERLAPPING_WRITES[name]
    raises_like_cpu(lambda: fn("cpu"), lambda: fn(loom.device))


@pytest.mark.parametrize("mask_dtype", [torch.uint8, torch.int32])
@pytest.mark.parametrize("op", ["masked_fill_", "masked_scatter_", "masked_select"])
def test_masks_of_other_dtypes_as_cpu(op, mask_dtype):
    # torch 1.13 takes a uint8 mask with a deprecation warning; later releases refuse it (and
    # masked_scatter_ warns first): the values, or the error, and the warnings are the CPU's.
    def run(d):
        x = torch.arange(4.0, device=d)
        mask = torch.tensor([1, 0, 1, 0], dtype=mask_dtype, device=d)
        if op == "masked_fill_":
            fn = lambda: x.masked_fill_(mask, -1.0)
        elif op == "masked_scatter_":
            fn = lambda: x.masked_scatter_(mask, torch.full((4,), 9.0, device=d))
        else:
            fn = lambda: torch.masked_select(x, mask)
        def caught():
            try:
                return fn()
            except RuntimeError as e:
                return e
        return _with_warnings(caught)

    (want, want_warned), (got, got_warned) = run("cpu"), run(loom.device)
    if isinstance(want, Exception):
        assert type(got) is type(want) and str(got) == str(want)
    else:
        assert torch.equal(got.cpu(), want)
    assert got_warned == want_warned


def test_put_alerts_when_deterministic():
    index, source = torch.tensor([0, 0]), torch.tensor([1.0, 2.0])
    torch.use_deterministic_algorithms(True)
    try:
        raises_like_cpu(lambda: torch.zeros(3).put_(index, source),
                        lambda: torch.zeros(3, device=loom.device).put_(index.to(loom.device),
                                                                        source.to(loom.device)))
        # Accumulating is deterministic on the CPU.
        got = torch.zeros(3, device=loom.device).put_(index.to(loom.device), source.to(loom.device),
                                                      accumulate=True)
        assert got.cpu().tolist() == [3.0, 0.0, 0.0]
    finally:
        torch.use_deterministic_algorithms(False)


def test_cpu_tensor_with_loom_indices_raises_like_cuda():
    # A CPU tensor indexed by another device's indices: PyTorch's message names both rules.
    x = torch.randn(3, 4, 4)
    i = torch.tensor([0, 2, 1], device=loom.device)
    for index in [lambda: x[i], lambda: x[:, i, None], lambda: x[i.cpu(), i]]:
        with pytest.raises(RuntimeError, match=r"indices should be either on cpu or on the same "
                           r"device as the indexed tensor \(cpu\)"):
            index()


REDUCED_FLOAT_SCATTERS = {
    **{f"scatter_reduce_{r}_{inc}": (lambda s, i, x, r=r, inc=inc:
                                      s.scatter_reduce_(0, i, x, r, include_self=inc))
       for r in ("sum", "prod", "mean", "amax", "amin") for inc in (True, False)},
    "scatter_add": lambda s, i, x: s.scatter_add_(0, i, x),
    "scatter_multiply": lambda s, i, x: s.scatter_(0, i, x, reduce="multiply"),
    "index_add": lambda s, i, x: s.index_add_(0, i[:, 0], x),
    "index_add_last_dim": lambda s, i, x: s.t().index_add_(1, i[:, 0], x.t()),
    "index_add_broadcast_source": lambda s, i, x: s.index_add_(0, i[:, 0], x[:, :1].expand(200, 30)),
    "index_add_alpha": lambda s, i, x: s.index_add_(0, i[:, 0], x, alpha=3),
    "index_add_int32": lambda s, i, x: s.index_add_(0, i[:, 0].int(), x),
    "index_add_1d": lambda s, i, x: s[:, 0].index_add_(0, i[:, 0], x[:, 0], alpha=3),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("op", list(REDUCED_FLOAT_SCATTERS))
def test_reduced_float_scatters_round_as_cpu(op, dtype):
    # NOTE [Scatters of reduced floats]: torch 1.13 rounds after every update; 2.x's
    # scatter_add (and index_add where it runs one) and scatter_reduce sum in float and
    # round once. Bit for bit the running CPU's values, duplicates included.
    g = torch.Generator().manual_seed(1)
    s = (torch.randn(20, 30, generator=g) * 3).to(dtype)
    x = (torch.randn(200, 30, generator=g)).to(dtype) * 0.5 + 1
    i = torch.randint(0, 20, (200, 30), generator=g)
    fn = REDUCED_FLOAT_SCATTERS[op]
    want = fn(s.clone(), i, x)
    got = fn(s.to(loom.device), i.to(loom.device), x.to(loom.device)).cpu()
    assert torch.equal(got, want)
