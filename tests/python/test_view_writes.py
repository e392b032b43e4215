"""Writes through views on Loom vs CPU torch: every alias sees every write, a value read
before a write keeps the old value, copies work between any layouts and dtypes, out= and
setitem write through views, and PyTorch's overlap rules and errors hold. Nothing here may
fall back to CPU (index writes, still in progress elsewhere, are marked).
"""
import pytest
import torch

import loom
from viewcheck import CL, D, same_bits, same_error, same_values


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


# --- aliasing scenarios: every alias sees every write; earlier reads keep old values ---

@pytest.fixture
def cpu_and_loom():
    """Runs a program on both devices and compares the named tensors it returns."""
    def run(program):
        want = program("cpu")
        got = program(D)
        assert want.keys() == got.keys()
        for k in want:
            g, w = got[k], want[k]
            assert g.shape == w.shape, k
            assert g.stride() == w.stride(), k
            assert g.storage_offset() == w.storage_offset(), k
            same_values(g, w)
        return got
    return run


def test_zero_through_slice_seen_by_view(cpu_and_loom):
    def program(dev):
        a = torch.arange(1.0, 5.0, device=dev)
        b = a.view(2, 2)
        a[1:].zero_()
        return dict(a=a, b=b)
    got = cpu_and_loom(program)
    assert got["b"].cpu().tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_iadd_then_iadd_through_views(cpu_and_loom):
    def program(dev):
        a = torch.arange(24.0, device=dev).view(4, 6)
        b = a[1:, 2:]
        c = a.t()[::2]
        a += 1
        b += 1
        c *= 2
        return dict(a=a, b=b, c=c)
    cpu_and_loom(program)


def test_iadd_seen_through_channels_last_views(cpu_and_loom):
    def program(dev):
        a = torch.arange(120.0, device=dev).view(2, 3, 4, 5).contiguous(memory_format=CL)
        v1 = a[:, 1]
        v2 = a[1, :, 2:, ::2]
        v3 = a.permute(0, 2, 3, 1).reshape(40, 3)
        a += 1
        v1.mul_(2)
        v3[::3] -= 5
        return dict(a=a, v1=v1, v2=v2, v3=v3)
    cpu_and_loom(program)


def test_iadd_seen_through_offset_views(cpu_and_loom):
    def program(dev):
        a = torch.arange(30.0, device=dev)
        v = a[7:19].view(3, 4)
        w = a.as_strided((4, 3), (2, 5), 3)
        a += 1
        v[1] += 10
        return dict(a=a, v=v, w=w)
    cpu_and_loom(program)


def test_value_read_before_write_keeps_old(cpu_and_loom):
    def program(dev):
        x = torch.arange(6.0, device=dev)
        y = x * 2
        z = x[::2] + 0
        s = x.sum()
        x.add_(1)
        x[0] = 100
        return dict(x=x, y=y, z=z, s=s)
    got = cpu_and_loom(program)
    assert got["y"].cpu().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]


def test_clone_is_not_an_alias(cpu_and_loom):
    def program(dev):
        x = torch.arange(6.0, device=dev).view(2, 3)
        c = x.t().clone()
        x.zero_()
        return dict(x=x, c=c)
    cpu_and_loom(program)


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "clamp_", "neg_", "exp_",
                                "fill_", "zero_", "copy_", "pow_", "lerp_"])
@pytest.mark.parametrize("where", ["transposed", "permuted", "stepped", "offset",
                                   "as_strided", "diagonal", "unfold_disjoint", "select"])
def test_inplace_through_views(op, where, cpu_and_loom):
    def program(dev):
        a = torch.arange(60.0, device=dev).view(3, 4, 5) / 7
        keep = a.permute(2, 0, 1)  # an alias that must see everything
        v = {
            "transposed": lambda: a[0].t(),
            "permuted": lambda: a.permute(1, 2, 0),
            "stepped": lambda: a[::2, 1::2, ::3],
            "offset": lambda: a[1:, 2:],
            "as_strided": lambda: a.as_strided((3, 3), (7, 2), 4),
            "diagonal": lambda: a.diagonal(1, 1, 2),
            "unfold_disjoint": lambda: a[1].unfold(1, 2, 2),
            "select": lambda: a[:, 2, 1],
        }[where]()
        other = (torch.arange(v.numel(), device=dev) * 0.5 - 3).view(v.shape)
        {
            "add_": lambda: v.add_(other, alpha=2),
            "sub_": lambda: v.sub_(3),
            "mul_": lambda: v.mul_(other),
            "div_": lambda: v.div_(4),
            "clamp_": lambda: v.clamp_(0.5, 3),
            "neg_": lambda: v.neg_(),
            "exp_": lambda: v.exp_(),
            "fill_": lambda: v.fill_(-2),
            "zero_": lambda: v.zero_(),
            "copy_": lambda: v.copy_(other),
            "pow_": lambda: v.pow_(2),
            "lerp_": lambda: v.lerp_(other, 0.25),
        }[op]()
        return dict(a=a, keep=keep, v=v)
    cpu_and_loom(program)


def test_permute_copy_is_transpose(cpu_and_loom):
    def program(dev):
        A = torch.zeros(4, 4, device=dev)
        B = torch.arange(16.0, device=dev).view(4, 4)
        A.permute(1, 0).copy_(B)
        assert torch.equal(A.cpu(), B.cpu().T)
        return dict(A=A)
    cpu_and_loom(program)


COPY_LAYOUTS = {  # (2, 3, 4, 2) views of a 200-element base
    "contiguous": lambda b: b[:48].view(2, 3, 4, 2),
    "transposed": lambda b: b[:48].view(2, 4, 3, 2).transpose(1, 2),
    "stepped": lambda b: b[:192].view(4, 3, 8, 2)[::2, :, ::2],
    "offset": lambda b: b[50:98].view(2, 3, 4, 2),
    "channels_last": lambda b: b[:48].view(2, 4, 2, 3).permute(0, 3, 1, 2),
    "as_strided": lambda b: b.as_strided((2, 3, 4, 2), (60, 1, 12, 5), 3),
    "expanded": lambda b: b[:8].view(1, 1, 4, 2).expand(2, 3, 4, 2),
}


@pytest.mark.parametrize("src_kind", list(COPY_LAYOUTS))
@pytest.mark.parametrize("dst_kind", [k for k in COPY_LAYOUTS if k != "expanded"])
def test_copy_between_layouts(src_kind, dst_kind, cpu_and_loom):
    def program(dev):
        sb = (torch.arange(200.0, device=dev) * 3) % 37 - 11
        db = torch.arange(200.0, device=dev) * -1
        src, dst = COPY_LAYOUTS[src_kind](sb), COPY_LAYOUTS[dst_kind](db)
        dst.copy_(src)
        return dict(sb=sb, db=db, dst=dst, src=src)
    cpu_and_loom(program)


def test_copy_between_channels_last_tensors(cpu_and_loom):
    def program(dev):
        src = torch.arange(120.0, device=dev).view(2, 3, 4, 5)
        a = torch.empty(2, 3, 4, 5, device=dev, memory_format=CL).zero_()
        a.copy_(src)
        b = torch.zeros(2, 3, 4, 5, device=dev)
        b.copy_(a)
        c = torch.zeros(2, 4, 5, 3, device=dev).permute(0, 3, 1, 2)
        c.copy_(a[:, :, :, :])
        d = torch.empty(2, 3, 4, 5, device=dev, memory_format=CL).zero_()[:, 1:, ::2]
        d.copy_(b[:, :2, 1::2])
        return dict(a=a, b=b, c=c, d=d)
    cpu_and_loom(program)


@pytest.mark.parametrize("dst_dtype", [torch.float32, torch.float16, torch.int32, torch.int8,
                                       torch.uint8, torch.bool, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("src_dtype", [torch.float64, torch.int64, torch.bool, torch.uint8])
@pytest.mark.parametrize("src_dev", ["loom", "cpu"])
def test_copy_into_view_broadcast_and_cast(src_dtype, dst_dtype, src_dev, cpu_and_loom):
    def program(dev):
        dst_base = torch.zeros(5, 8, dtype=dst_dtype, device=dev)
        dst = dst_base.t()[1::2, 1:]
        src = torch.arange(4, dtype=torch.float64).view(1, 4).to(src_dtype)
        if src_dev == "loom":
            src = src.to(dev)
        dst.copy_(src)
        dst_base[0].copy_(src[0, :1])  # broadcast a single element along a row
        return dict(dst_base=dst_base, dst=dst)
    cpu_and_loom(program)


def test_copy_from_loom_view_to_cpu_view():
    src_c = torch.arange(24.0).view(4, 6)
    src_l = src_c.to(D)
    dst_c, dst_l = torch.zeros(8, 6), torch.zeros(8, 6)
    dst_c[::2].t().copy_(src_c.t()[:, :])
    dst_l[::2].t().copy_(src_l.t()[:, :])
    assert torch.equal(dst_l, dst_c)
    dst_l = torch.zeros(6, 4, dtype=torch.int16)
    dst_l.copy_(src_l.t())
    assert torch.equal(dst_l, src_c.t().to(torch.int16))
    dst_l = torch.zeros(3, 6)
    dst_l.copy_(src_l[1])  # broadcast out of Loom
    assert torch.equal(dst_l, src_c[1].expand(3, 6))


def test_copy_self_and_partial_overlap(cpu_and_loom):
    def program(dev):
        a = torch.arange(10.0, device=dev)
        a.copy_(a)
        a[::2].copy_(a[1::2])  # disjoint elements of one storage: allowed
        b = torch.arange(12.0, device=dev).view(3, 4)
        b.t().copy_(b.t().clone())
        return dict(a=a, b=b)
    cpu_and_loom(program)


def test_copy_partial_overlap_raises_like_cpu():
    for dev in ("cpu", D):
        a = torch.arange(10.0, device=dev)
        with pytest.raises(RuntimeError, match="unsupported operation"):
            a[1:].copy_(a[:-1])


@pytest.mark.parametrize("op", ["add", "mul", "neg", "sum_dim", "exp", "where", "clamp"])
@pytest.mark.parametrize("where", ["slice", "transposed", "stepped", "channels_last"])
def test_out_into_view(op, where, cpu_and_loom):
    def program(dev):
        x = torch.arange(24.0, device=dev).view(4, 6) / 5
        y = torch.arange(24.0, device=dev).view(4, 6) / 4 - 3
        base = torch.zeros(2, 8, 6, device=dev)
        out = {
            "slice": lambda: base[1, 2:6],
            "transposed": lambda: base[0, :6, :4].t(),
            "stepped": lambda: base[:, ::2][1],
            "channels_last": lambda: base.view(1, 2, 8, 6).contiguous(memory_format=CL)[
                0, 1, 1:5],
        }[where]()
        if op == "sum_dim":
            torch.sum(x.view(4, 2, 3), dim=2, out=out[:, :2])
        else:
            {
                "add": lambda: torch.add(x, y, alpha=2, out=out),
                "mul": lambda: torch.mul(x, 3, out=out),
                "neg": lambda: torch.neg(y, out=out),
                "exp": lambda: torch.exp(y, out=out),
                "where": lambda: torch.where(x > 2, x, y, out=out),
                "clamp": lambda: torch.clamp(y, -1, 1, out=out),
            }[op]()
        return dict(base=base, out=out)
    cpu_and_loom(program)


def test_out_resizes_empty_view(cpu_and_loom):
    def program(dev):
        x = torch.arange(6.0, device=dev)
        out = torch.zeros(10, device=dev)[3:3]
        torch.mul(x, 2, out=out)
        return dict(out=out)
    cpu_and_loom(program)


def test_where_out_resizes_like_cpu(cpu_and_loom):
    def program(dev):
        y = torch.arange(24.0, device=dev).view(4, 6) - 5
        out = torch.zeros(24, device=dev)
        with pytest.warns(UserWarning, match="was resized"):
            torch.where(y > 0, y, y, out=out)
        return dict(out=out)
    cpu_and_loom(program)


@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@pytest.mark.parametrize("op", ["add", "mul", "maximum"])
def test_out_that_is_an_input_is_not_resized(op):
    fn = getattr(torch, op)
    for dev in ("cpu", D):
        base = torch.zeros(8, device=dev)
        a, b = base[::2], torch.ones(2, 4, device=dev)
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            fn(a, b, out=a)
        assert a.shape == (4,) and a.stride() == (2,)


SETITEMS = {
    "int": (1, 5.0),
    "neg_int": (-1, -2.0),
    "int_int": ((1, 2), 3.0),
    "slice": (slice(1, 3), 7.0),
    "slice_step": ((slice(None), slice(None, None, 2)), 1.5),
    "ellipsis": ((Ellipsis, 1), 9.0),
    "ellipsis_all": (Ellipsis, 4.0),
    "none": ((None, 1), 6.0),
    "none_mid": ((slice(None), None, slice(1, 2)), 8.0),
    "int_none_ellipsis": ((2, None, Ellipsis, slice(0, 1)), -3.0),
    "tensor_value": ((slice(None), 2), "row"),
    "tensor_value_broadcast": ((slice(1, None), slice(None, 4)), "bcast"),
    "tensor_value_cast": (0, "int"),
    "cpu_scalar_value": ((1, slice(None)), "cpu0d"),
    "loom_scalar_value": ((slice(None), 3), "loom0d"),
    "bool_value": ((0, 0), True),
    "int_value_into_float": ((slice(None), -1), 3),
}


@pytest.mark.parametrize("on", ["contiguous", "transposed", "offset_view"])
@pytest.mark.parametrize("name", list(SETITEMS))
def test_setitem(name, on, cpu_and_loom):
    index, value = SETITEMS[name]

    def program(dev):
        base = torch.arange(40.0, device=dev)
        t = {"contiguous": lambda: base[:20].view(4, 5),
             "transposed": lambda: base[:20].view(5, 4).t(),
             "offset_view": lambda: base[10:30].view(4, 5)}[on]()
        watcher = base.view(2, 20)
        v = value
        if value == "row":
            v = torch.arange(4.0, device=dev) * -1
        elif value == "bcast":
            v = torch.tensor([10.0, 20.0, 30.0, 40.0], device=dev)
        elif value == "int":
            v = torch.arange(5, dtype=torch.int64, device=dev)
        elif value == "cpu0d":
            v = torch.tensor(12.5)
        elif value == "loom0d":
            v = torch.tensor(-12.5, device=dev)
        t[index] = v
        return dict(base=base, t=t, watcher=watcher)
    cpu_and_loom(program)


def test_setitem_loop(cpu_and_loom):
    def program(dev):
        t = torch.zeros(10, 3, dtype=torch.int32, device=dev)
        view = t.t()
        for i in range(10):
            t[i] = i
            t[i, i % 3] = -i
        return dict(t=t, view=view)
    cpu_and_loom(program)


def test_fill_and_zero_through_views(cpu_and_loom):
    def program(dev):
        a = torch.arange(24, dtype=torch.int64, device=dev).view(2, 3, 4)
        a[:, 1].fill_(-1)
        a.permute(2, 1, 0)[::3].zero_()
        a.diagonal(0, 1, 2).fill_(torch.tensor(7, device=dev))
        a[1, 2, 3].fill_(torch.tensor(100))  # 0-dim CPU value
        return dict(a=a)
    cpu_and_loom(program)


def test_fill_on_expanded_and_overlapping_as_cpu(cpu_and_loom):
    # CPU's fill_/zero_ do not check internal overlap: every alias gets the value.
    def program(dev):
        a = torch.zeros(8, device=dev)
        a[:2].view(2, 1).expand(2, 3).fill_(5)
        a.as_strided((3, 3), (1, 1), 2).fill_(-1)
        a[7:].expand(4).zero_()
        return dict(a=a)
    cpu_and_loom(program)


@pytest.mark.parametrize("dtype,value", [(torch.uint8, -1.5), (torch.int8, 300),
                                         (torch.uint8, 256), (torch.int16, 1e6)])
def test_fill_overflow_raises_like_cpu(dtype, value):
    for dev in ("cpu", D):
        t = torch.zeros(4, dtype=dtype, device=dev)
        with pytest.raises(RuntimeError, match="value cannot be converted to type"):
            t[1:].fill_(value)
        with pytest.raises(RuntimeError, match="value cannot be converted to type"):
            t[::2] = value


def test_setitem_scalar_into_overlapping_view():
    # torch 1.13's setitem fills when the scalar becomes a CPU tensor, but for any other
    # device (CUDA too) it makes a device tensor and copy_()s it, which rejects the overlap;
    # 2.x copies on the CPU too.
    c = torch.zeros(1, 3).expand(2, 3)
    if torch.__version__.startswith("1."):
        c[:, 1] = 5
        assert c.tolist() == [[0.0, 5.0, 0.0]] * 2
    else:
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            c[:, 1] = 5
    x = torch.zeros(1, 3, device=D).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[:, 1] = 5
    x[:, 1].fill_(5)  # the explicit fill is allowed, as on CPU
    assert x.cpu().tolist() == [[0.0, 5.0, 0.0]] * 2


def test_no_realization_for_view_semantics():
    """Views and writes stay lazy: nothing runs until a value is read."""
    a = torch.arange(24.0).to(D)
    a.cpu()
    loom.reset_metrics()
    b = a.view(4, 6)
    c = b.t()[1:, ::2]
    a[3:9].zero_()
    c.add_(1)
    b[2].fill_(4)
    a.unsqueeze_(0).squeeze_(0)
    assert loom.metrics()["kernels_run"] == 0
    assert loom.metrics()["realizations"] == 0
    want = torch.arange(24.0)
    want[3:9] = 0
    want.view(4, 6).t()[1:, ::2].add_(1)
    want.view(4, 6)[2] = 4
    assert torch.equal(a.cpu(), want)


# --- overlap rules and errors: CPU's exception types ---

ERRORS = {
    "add_expanded": lambda d: torch.zeros(1, device=d).expand(3).add_(1),
    "mul_expanded_tensor": lambda d: torch.zeros(3, 1, device=d).expand(3, 3).mul_(
        torch.ones(3, 3, device=d)),
    "copy_expanded": lambda d: torch.zeros(1, device=d).expand(3).copy_(torch.ones(3, device=d)),
    "copy_cpu_into_expanded": lambda d: torch.zeros(1, device=d).expand(3).copy_(torch.ones(3)),
    "add_as_strided0": lambda d: torch.zeros(4, device=d).as_strided((3,), (0,)).add_(1),
    "exp_as_strided_overlap": lambda d: torch.zeros(8, device=d).as_strided(
        (3, 3), (1, 1)).exp_(),
    "out_overlapping": lambda d: torch.add(torch.ones(3, device=d), 1,
                                           out=torch.zeros(1, device=d).expand(3)),
    "setitem_expanded": lambda d: torch.zeros(1, device=d).expand(2, 3).__setitem__(
        0, torch.ones(3, device=d)),
    "fill_expanded": lambda d: torch.zeros(1, device=d).expand(3).fill_(2),
    "zero_expanded": lambda d: torch.zeros(1, device=d).expand(3).zero_(),
    "neg_strides": lambda d: torch.zeros(4, device=d).as_strided((3,), (-1,), 2),
    "neg_strides_inplace": lambda d: torch.zeros(4, device=d).as_strided_((2, 2), (2, -1), 1),
    "neg_offset": lambda d: torch.zeros(4, device=d).as_strided((2,), (1,), -1),
    "neg_size": lambda d: torch.zeros(4, device=d).as_strided((-2,), (1,)),
    "as_strided_oob": lambda d: torch.zeros(4, device=d).as_strided((3,), (2,), 0),
    "as_strided_oob_offset": lambda d: torch.zeros(4, device=d).as_strided((2,), (1,), 3),
    "as_strided_len_mismatch": lambda d: torch.zeros(4, device=d).as_strided((2, 2), (1,)),
    "view_bad_numel": lambda d: torch.zeros(4, device=d).view(3),
    "view_two_minus1": lambda d: torch.zeros(4, device=d).view(-1, -1),
    "view_noncontig": lambda d: torch.zeros(4, 6, device=d).t().view(24),
    "view_dtype_stride": lambda d: torch.zeros(4, 6, device=d).t().view(torch.uint8),
    "view_dtype_size": lambda d: torch.zeros(3, device=d).view(torch.float64),
    "view_dtype_offset": lambda d: torch.zeros(5, device=d)[1:].view(torch.float64),
    "select_oob": lambda d: torch.zeros(4, 3, device=d).select(1, 3),
    "select_neg_oob": lambda d: torch.zeros(4, 3, device=d).select(0, -5),
    "index_oob": lambda d: torch.zeros(4, device=d)[5],
    "index_zero_dim": lambda d: torch.zeros((), device=d)[0],
    "too_many_indices": lambda d: torch.zeros(4, device=d)[1, 2],
    "setitem_oob": lambda d: torch.zeros(4, device=d).__setitem__(4, 1.0),
    "setitem_bad_shape": lambda d: torch.zeros(4, 3, device=d).__setitem__(
        slice(None), torch.ones(2, device=d)),
    "narrow_oob": lambda d: torch.zeros(4, device=d).narrow(0, 2, 3),
    "dim_oob": lambda d: torch.zeros(4, device=d).transpose(0, 1),
    "permute_bad": lambda d: torch.zeros(2, 3, device=d).permute(0, 0),
    "expand_bad": lambda d: torch.zeros(2, 3, device=d).expand(4, 3),
    "expand_fewer_dims": lambda d: torch.zeros(2, 3, device=d).expand(3),
    "unfold_too_big": lambda d: torch.zeros(4, device=d).unfold(0, 5, 1),
    "unfold_step0": lambda d: torch.zeros(4, device=d).unfold(0, 2, 0),
    "squeeze_dim_oob": lambda d: torch.zeros(4, device=d).squeeze(2),
    "t_3d": lambda d: torch.zeros(2, 3, 4, device=d).t(),
    "diagonal_same_dim": lambda d: torch.zeros(3, 3, device=d).diagonal(0, 1, 1),
    "split_zero": lambda d: torch.zeros(4, device=d).split(0),
    "chunk_zero": lambda d: torch.zeros(4, device=d).chunk(0),
    "movedim_repeat": lambda d: torch.zeros(2, 3, device=d).movedim((0, 1), (1, 1)),
    "copy_bad_broadcast": lambda d: torch.zeros(3, device=d).copy_(torch.zeros(4, device=d)),
    "resize_negative": lambda d: torch.zeros(3, device=d).resize_(-1),
    "set_oob": lambda d: torch.empty(0, device=d).set_(torch.zeros(4, device=d).storage(), 2,
                                                         (3,), (1,)),
    "inplace_bad_broadcast": lambda d: torch.zeros(3, 1, device=d).add_(torch.ones(3, 3,
                                                                                  device=d)),
    "copy_cpu_bad_broadcast": lambda d: torch.zeros(3, 2, device=d).copy_(torch.zeros(3)),
    "copy_grows_dst": lambda d: torch.zeros(3, device=d).copy_(torch.zeros(2, 3, device=d)),
    "copy_cpu_grows_dst": lambda d: torch.zeros(3, device=d).copy_(torch.zeros(2, 3)),
    "set_typed_storage_dtype": lambda d: torch.empty(0, device=d).set_(
        torch.zeros(4, dtype=torch.int32, device=d).storage()),
    "view_as_complex_bad_shape": lambda d: torch.view_as_complex(torch.zeros(3, 3, device=d)),
    "view_as_complex_bad_dtype": lambda d: torch.view_as_complex(
        torch.zeros(3, 2, dtype=torch.int32, device=d)),
    "view_as_complex_bad_stride": lambda d: torch.view_as_complex(
        torch.zeros(2, 3, device=d).t()),
    "view_as_real_of_real": lambda d: torch.view_as_real(torch.zeros(3, 2, device=d)),
}


# CPU accepts these, but the result is not defined: overlapping elements written in an
# order PyTorch leaves open, or storage grown by set_ (uninitialized).
UNDEFINED_RESULT = {"exp_as_strided_overlap", "set_oob"}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_like_cpu(name):
    fn = ERRORS[name]
    want, err = same_error(lambda: fn("cpu"), lambda: fn(D))
    if err is None:  # CPU accepts it: so must Loom, with the same result
        got = fn(D)
        if isinstance(want, torch.Tensor) and name not in UNDEFINED_RESULT:
            same_bits(got, want)


# Elementwise in-place and out= kernels (csrc/aten/ops_elementwise.cpp) check the output's
# internal overlap (through their meta run) but not its partial overlap with the inputs,
# which TensorIterator rejects on CPU; Loom computes the functional result instead.
PARTIAL_OVERLAP = {
    "add_shifted": lambda a: a[1:].add_(a[:-1]),
    "add_transpose_of_self": lambda a: a.view(4, 4).add_(a.view(4, 4).t()),
    "mul_out_shifted": lambda a: torch.mul(a[:-1], 2, out=a[1:]),
    "exp_out_shifted": lambda a: torch.exp(a[:-2], out=a[2:]),
}


@pytest.mark.parametrize("name", list(PARTIAL_OVERLAP))
def test_partial_overlap_of_output_and_input_raises_like_cpu(name):
    fn = PARTIAL_OVERLAP[name]
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written"):
        fn(torch.arange(16.0))
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the written"):
        fn(torch.arange(16.0, device=D))


# --- index writes: gathers and scatters on Loom, no fallbacks ---

class TestIndexWrites:
    @pytest.fixture(autouse=True)
    def no_fallbacks(self, monkeypatch):  # replaces the module's: the test body checks
        monkeypatch.setenv("LOOM_FALLBACK", "error")
        loom.reset_metrics()

    @pytest.mark.parametrize("name", [
        "bool_mask", "index_tensor", "index_put_accumulate", "index_and_slice", "scatter_",
        "masked_fill_", "index_fill_", "index_copy_", "index_add_"])
    def test_index_write(self, name, cpu_and_loom):
        def program(dev):
            a = torch.arange(20.0, device=dev).view(4, 5)
            alias = a.t()
            idx = torch.tensor([0, 2], device=dev)
            if name == "bool_mask":
                a[a > 10] = -1
            elif name == "index_tensor":
                a[idx] = 7
            elif name == "index_put_accumulate":
                a.index_put_((idx, idx), torch.ones(2, device=dev), accumulate=True)
            elif name == "index_and_slice":
                a[1:, idx] = torch.tensor([[1.0, 2.0]], device=dev)
            elif name == "scatter_":
                a.scatter_(1, torch.tensor([[0], [4]], device=dev), -3.0)
            elif name == "masked_fill_":
                a.t()[::2].masked_fill_(torch.tensor([True, False, True, True], device=dev), 0)
            elif name == "index_fill_":
                a.index_fill_(1, idx, -5)
            elif name == "index_copy_":
                a.index_copy_(0, idx, torch.zeros(2, 5, device=dev))
            elif name == "index_add_":
                a.index_add_(0, idx, torch.ones(2, 5, device=dev))
            return dict(a=a, alias=alias)
        cpu_and_loom(program)
        assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("case", ["flip", "transpose", "roll", "permute", "shifted", "live"])
def test_in_place_reading_its_old_value_reindexed(case):
    # The old value is read through a pending expression that moves elements (a flip of
    # `p * 2`): the write must not reuse p's memory while other elements still read it.
    def run(dev):
        p = torch.arange(64.0).reshape(8, 8).to(dev)
        if dev != "cpu":
            loom.sync()
        if case == "flip":
            p.add_((p * 2).flip(0))
        elif case == "transpose":
            p.mul_((p + 1).t())
        elif case == "roll":
            p.sub_((p * 3).roll(5))
        elif case == "permute":
            p.copy_((p - 1).view(8, 2, 4).permute(0, 2, 1).reshape(8, 8))
        elif case == "shifted":
            p[1:].add_((p * 2)[:-1])
        else:  # a live intermediate, stored beside the write (NOTE [Sibling stores])
            q = (p * 2).flip(1)
            p.add_(q)
            return p.cpu(), q.cpu()
        return (p.cpu(),)

    for want, got in zip(run("cpu"), run(D)):
        assert torch.equal(got, want)
