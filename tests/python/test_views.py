"""Views on Loom vs CPU torch: every view op, in-place view op, set_, resize_ and
allocation must report what CPU reports (sizes, strides, storage offset, contiguity,
_is_view(), which tensor is its _base, which storage it shares), and a write through any
view must land where it lands on CPU. Where CPU raises, Loom must raise the same exception
type with a similar message. Nothing here may fall back to CPU.

Writes, copies and the overlap rules are in test_view_writes.py.
"""
import pytest
import torch

import loom
from viewcheck import (CL, D, KINDS, ROOT_NUMEL, base_slot, check_all, check_view, pair, root,
                       same_bits, same_error)


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


# --- view ops ---

VIEW_OPS = {
    # as_strided and its edge cases (offsets are absolute storage offsets)
    "as_strided": lambda x: x.as_strided((3, 4), (5, 2), 7),
    "as_strided_self_offset": lambda x: x.as_strided((2, 3), (3, 1)),
    "as_strided_overlap": lambda x: x.as_strided((4, 4), (1, 1), 2),
    "as_strided_stride0": lambda x: x.as_strided((3, 2, 4), (0, 1, 0), 5),
    "as_strided_step": lambda x: x.as_strided((5,), (3,), 1),
    "as_strided_empty": lambda x: x.as_strided((0, 3), (1, 1), 100),
    "as_strided_scalar": lambda x: x.as_strided((), (), 11),
    # view, dtype views and _reshape_alias
    "view_flat": lambda x: x.view(-1),
    "view_shape": lambda x: x.view(6, 20),
    "view_split_dim": lambda x: x.view(2, 3, 2, 2, 5),
    "view_merge_last": lambda x: x.view(2, 3, 20),
    "view_as": lambda x: x.view_as(torch.empty(6, 4, 5)),
    "view_int32": lambda x: x.view(torch.int32),
    "view_uint8": lambda x: x.view(torch.uint8),
    "view_int16": lambda x: x.view(torch.int16),
    "view_float64": lambda x: x[..., :4].view(torch.float64),
    "view_float64_odd": lambda x: x.view(torch.float64),
    "view_bool": lambda x: x.view(torch.uint8).view(torch.bool),
    "reshape": lambda x: x.reshape(6, 20),
    "reshape_last": lambda x: x.reshape(2, 3, 20),
    "reshape_flat": lambda x: x.reshape(-1),
    "reshape_alias": lambda x: torch.ops.aten._reshape_alias(x, (3, 2, 20), (20, 60, 1)),
    "flatten": lambda x: x.flatten(),
    "flatten_tail": lambda x: x.flatten(2),
    "flatten_mid": lambda x: x.flatten(1, 2),
    "unflatten": lambda x: x.unflatten(3, (5, 1)),
    # unfold
    "unfold": lambda x: x.unfold(3, 2, 1),
    "unfold_step": lambda x: x.unfold(2, 2, 2),
    "unfold_whole": lambda x: x.unfold(1, 3, 5),
    # transposes
    "transpose": lambda x: x.transpose(0, 3),
    "transpose_same": lambda x: x.transpose(1, 1),
    "swapaxes": lambda x: x.swapaxes(1, -1),
    "t": lambda x: x[1, 2].t(),
    "t_1d": lambda x: x[1, 2, 3].t(),
    "mT": lambda x: x.mT,
    "permute": lambda x: x.permute(3, 1, 0, 2),
    "permute_neg": lambda x: x.permute(-1, -2, -3, -4),
    "movedim": lambda x: x.movedim(1, 3),
    "movedim_many": lambda x: x.movedim((0, 1), (3, 2)),
    # expand
    "expand": lambda x: x[:, :1].expand(2, 3, 4, 5),
    "expand_new_dims": lambda x: x.expand(3, 2, 2, 3, 4, 5),
    "expand_minus1": lambda x: x[:1, :, :1].expand(4, -1, 3, -1),
    "expand_as": lambda x: x[0, :, :1].expand_as(torch.empty(7, 3, 4, 5)),
    "broadcast_to": lambda x: x[:, :, :, :1].broadcast_to(2, 3, 4, 6),
    # select, slice, narrow
    "select": lambda x: x[1],
    "select_neg": lambda x: x.select(2, -1),
    "select_mid": lambda x: x[:, 2],
    "select_all": lambda x: x[1, 2, 3, 4],
    "slice_steps": lambda x: x[:, ::2, 1::3],
    "slice_tail": lambda x: x[..., 1:4:2],
    "slice_neg_start": lambda x: x[1:, :, -3:],
    "slice_empty": lambda x: x[:, 2:2],
    "slice_clamped": lambda x: x[:, 1:100:4],
    "slice_full": lambda x: x[:],
    "ellipsis": lambda x: x[...],
    "none_index": lambda x: x[None, :, None, 1],
    "narrow": lambda x: x.narrow(2, 1, 2),
    "narrow_neg": lambda x: x.narrow(-1, -3, 3),
    # diagonal
    "diagonal": lambda x: x.diagonal(),
    "diagonal_offset": lambda x: x.diagonal(offset=1, dim1=2, dim2=3),
    "diagonal_neg_offset": lambda x: x.diagonal(offset=-2, dim1=3, dim2=2),
    "diagonal_dims": lambda x: x.diagonal(0, 3, 1),
    "diagonal_past_end": lambda x: x.diagonal(offset=7, dim1=2, dim2=3),
    "diagonal_2d": lambda x: x[0, 1].diagonal(-1),
    # squeeze / unsqueeze
    "squeeze": lambda x: x[:, :1, :, 2:3].squeeze(),
    "squeeze_dim": lambda x: x[:, :1].squeeze(1),
    "squeeze_noop": lambda x: x.squeeze(0),
    "unsqueeze": lambda x: x.unsqueeze(2),
    "unsqueeze_last": lambda x: x.unsqueeze(-1),
    "unsqueeze_first": lambda x: x.unsqueeze(0),
    # multi-output views
    "split": lambda x: x.split(2, dim=3),
    "split_sizes": lambda x: x.split([1, 2], dim=1),
    "chunk": lambda x: x.chunk(3, dim=1),
    "chunk_uneven": lambda x: x.chunk(2, dim=3),
    "unbind": lambda x: x.unbind(1),
    "tensor_split": lambda x: x.tensor_split(3, dim=3),
    "tensor_split_idx": lambda x: x.tensor_split([1, 3], dim=2),
    "hsplit": lambda x: x.hsplit([1]),
    "dsplit": lambda x: x.dsplit(2),
    # aliases
    "alias": lambda x: torch.ops.aten.alias(x),
    "detach": lambda x: x.detach(),
    "real": lambda x: x.real,
    "view_as_self": lambda x: x.view_as(x),
    # chains
    "chain_permute_slice": lambda x: x.permute(2, 0, 3, 1)[1:, :, ::2].unsqueeze(1),
    "chain_diag_of_t": lambda x: x[1].transpose(0, 2).diagonal(1, 0, 1),
    "chain_unfold_select": lambda x: x.unfold(3, 3, 1)[:, 1].select(-1, 2).t(),
    "chain_expand_view": lambda x: x[:, :1].expand(2, 6, 4, 5).narrow(1, 2, 3)[..., ::2],
    "chain_split_squeeze": lambda x: x.split(1, dim=1)[2].squeeze(1).movedim(0, -1),
    "chain_strided_of_strided": lambda x: x.as_strided((6, 6), (3, 1), 4).as_strided(
        (3, 2), (2, 5), 10)[1:],
    "chain_flatten_t": lambda x: x[0].flatten(1).t()[::3],
    "chain_view_dtype": lambda x: x[:, :, 1].view(torch.int16)[..., ::2].unsqueeze(0),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_view_op(name, kind):
    fn = VIEW_OPS[name]
    rc, xc, rl, xl = pair(kind)
    want, err = same_error(lambda: fn(xc), lambda: fn(xl))
    if err is not None:
        return
    got = fn(xl)
    check_all(got, want, (rl, xl), (rc, xc))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int64, torch.int8,
                                   torch.uint8, torch.bool, torch.bfloat16])
@pytest.mark.parametrize("name", ["view_int32", "view_uint8", "view_int16", "view_float64",
                                  "view_bool", "transpose", "diagonal_offset", "expand",
                                  "chain_view_dtype", "as_strided_overlap"])
def test_view_op_dtypes(name, dtype):
    fn = VIEW_OPS[name]
    rc = root(dtype)
    rl = rc.to(D)
    xc, xl = KINDS["sliced"](rc), KINDS["sliced"](rl)
    want, err = same_error(lambda: fn(xc), lambda: fn(xl))
    if err is None:
        check_all(fn(xl), want, (rl, xl), (rc, xc))


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_write_through_view(name, kind):
    """An in-place op on the view lands in the root on both devices (or both raise)."""
    fn = VIEW_OPS[name]
    rc, xc, rl, xl = pair(kind)
    try:
        fn(xc)
    except Exception:  # noqa: BLE001
        pytest.skip("CPU rejects the view itself")
    outs_c, outs_l = fn(xc), fn(xl)
    if not isinstance(outs_c, (tuple, list)):
        outs_c, outs_l = [outs_c], [outs_l]
    for i, (vc, vl) in enumerate(zip(outs_c, outs_l)):
        if torch._debug_has_internal_overlap(vc) == 2:
            continue  # "too hard" overlap: CPU writes it, in an order PyTorch leaves undefined
        one = True if vc.dtype == torch.bool else i + 1
        _, err = same_error(lambda: vc.add_(one), lambda: vl.add_(one))
        if err is None:
            vl.add_(one)
    same_bits(rl, rc)
    same_bits(xl, xc)
    for vc, vl in zip(outs_c, outs_l):
        same_bits(vl, vc)


def test_view_of_view_base_is_root():
    for dev in ("cpu", D):
        a = torch.zeros(4, 6, device=dev)
        v = a.t()[1:]
        w = v.unsqueeze(0).expand(3, 5, 4)
        assert v._base is a and w._base is a
        assert not a._is_view()
        d = a.detach()  # shares a's storage but is not a view of it
        assert d._base is None and not d._is_view()
        assert d.data_ptr() == a.data_ptr()
        assert v.detach()._base is None


def test_where_result_strides_on_unfold_view():
    x = torch.zeros(4, 6).unfold(0, 1, 1)  # strides (6, 1, 6)
    want = torch.where(x > 0, x, x)
    xl = torch.zeros(4, 6, device=D).unfold(0, 1, 1)
    got_strides = torch.where(xl > 0, xl, xl).stride()
    assert want.stride() == (6, 1, 1)
    assert got_strides == (6, 1, 1)


# --- views of a 0-dim tensor ---

@pytest.mark.parametrize("fn", [
    lambda x: x.view(()),
    lambda x: x.unsqueeze(0).expand(3),
    lambda x: x.as_strided((2, 2), (0, 0)),
    lambda x: x[None, ..., None],
    lambda x: x.reshape(1, 1),
    lambda x: x.squeeze(),
    lambda x: x.t(),
    lambda x: x.flatten(),
], ids=["view0", "expand", "as_strided0", "none", "reshape", "squeeze", "t", "flatten"])
def test_views_of_zero_dim(fn):
    rc = torch.arange(6.0)
    rl = rc.to(D)
    xc, xl = rc[3], rl[3]
    check_all(fn(xl), fn(xc), (rl, xl), (rc, xc))


# --- complex views: complex dtypes are not Loom dtypes ---

def test_view_as_real_of_real_raises_like_cpu():
    x = torch.zeros(3, 2)
    _, err = same_error(lambda: torch.view_as_real(x), lambda: torch.view_as_real(x.to(D)))
    assert isinstance(err, RuntimeError)


def test_view_as_complex_shares_storage_like_cpu():
    for dtype in (torch.float32, torch.float64):
        x = torch.arange(6.0, dtype=dtype).view(3, 2)
        c, lc = torch.view_as_complex(x), torch.view_as_complex(x.to(D))
        assert lc.dtype == c.dtype and lc.stride() == c.stride()
        assert torch.equal(lc.cpu(), c)
        lr = torch.view_as_real(lc)
        lr.mul_(2)  # a write through the real view is seen by the complex one
        assert torch.equal(lc.cpu(), c * 2)


# --- in-place view ops ---

INPLACE_VIEW_OPS = {
    "squeeze_": lambda x: x[:, :1].squeeze_(),
    "squeeze_dim_": lambda x: x[:, :1].squeeze_(1),
    "unsqueeze_": lambda x: x.unsqueeze_(1),
    "unsqueeze_view_": lambda x: x[1].unsqueeze_(-1),
    "t_": lambda x: x[0, 1].t_(),
    "t_twice": lambda x: x[0, 1].t_().t_(),
    "transpose_": lambda x: x.transpose_(0, 2),
    "transpose_view_": lambda x: x[:, 1::2].transpose_(1, 3),
    "as_strided_": lambda x: x.as_strided_((3, 3), (4, 1), 2),
    "as_strided_view_": lambda x: x[1:].as_strided_((2, 5), (1, 3)),
    "chain_": lambda x: x[1].t_().unsqueeze_(0).squeeze_(0).transpose_(0, 1)[::2].unsqueeze_(2),
    "swapdims_": lambda x: x.swapdims_(1, 3),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(INPLACE_VIEW_OPS))
def test_inplace_view_op(name, kind):
    fn = INPLACE_VIEW_OPS[name]
    rc, xc, rl, xl = pair(kind)
    want, err = same_error(lambda: fn(xc), lambda: fn(xl))
    if err is not None:
        return
    got = fn(xl)
    check_view(got, want, (rl, xl), (rc, xc))
    check_view(xl, xc, (rl,), (rc,))
    got.mul_(-1)
    want.mul_(-1)
    same_bits(rl, rc)


def test_inplace_view_op_returns_self():
    x = torch.zeros(2, 3, device=D)
    assert x.t_() is x
    assert x.unsqueeze_(0) is x
    assert x.squeeze_() is x
    assert x.as_strided_((3,), (1,)) is x


# --- set_ ---

SET_OPS = {
    "tensor": lambda y, x, r: y.set_(x),
    "storage": lambda y, x, r: y.set_(r.storage()),
    "storage_offset": lambda y, x, r: y.set_(r.storage(), 10, (3, 4), (1, 3)),
    "storage_offset_contig": lambda y, x, r: y.set_(r.storage(), 5, (2, 6)),
    "storage_overlap": lambda y, x, r: y.set_(r.storage(), 1, (4, 4), (1, 1)),
    "empty": lambda y, x, r: y.set_(),
    "out_of_bounds": lambda y, x, r: y.set_(r.storage(), ROOT_NUMEL - 2, (3,), (1,)),
    "untyped": lambda y, x, r: y.set_(r.storage()._storage, 8, (2, 2)),
    "keywords": lambda y, x, r: y.set_(source=r.storage(), storage_offset=3, size=(2,),
                                       stride=(5,)),
    "tensor_offset": lambda y, x, r: y.set_(x, 4, (3,), (2,)),
    "bad_args": lambda y, x, r: y.set_(r.storage(), 3),
    "negative_offset": lambda y, x, r: y.set_(r.storage(), -1, (2,)),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(SET_OPS))
@pytest.mark.parametrize("target", ["fresh", "view"])
def test_set_(name, kind, target):
    fn = SET_OPS[name]
    rc, xc, rl, xl = pair(kind)
    yc = torch.empty(0) if target == "fresh" else torch.zeros(8)[2:]
    yl = yc.to(D) if target == "fresh" else torch.zeros(8, device=D)[2:]
    want, err = same_error(lambda: fn(yc, xc, rc), lambda: fn(yl, xl, rl))
    if err is not None:
        return
    got = fn(yl, xl, rl)
    assert got is yl and want is yc
    if name == "out_of_bounds":  # the storage grew: its new elements are uninitialized
        assert rl.storage().size() == rc.storage().size() == ROOT_NUMEL + 1
        got, want = got[:2], want[:2]
        rl, rc = rl[:ROOT_NUMEL], rc[:ROOT_NUMEL]
    check_view(got, want, (rl, xl), (rc, xc))
    assert got.is_set_to(xl) == want.is_set_to(xc)
    if want.numel() and torch._debug_has_internal_overlap(want) == 0:
        got.add_(1)
        want.add_(1)
        same_bits(rl, rc)


def test_set_shares_writes_both_ways():
    for dev in ("cpu", D):
        a = torch.arange(6.0, device=dev)
        b = torch.empty(0, device=dev).set_(a.storage(), 2, (2, 2), (1, 2))
        a[3] = -1
        b[0, 0] = 100
        assert b.tolist() == [[100.0, 4.0], [-1.0, 5.0]]
        assert a.tolist() == [0.0, 1.0, 100.0, -1.0, 4.0, 5.0]


def test_set_across_devices_raises_like_cpu():
    with pytest.raises(RuntimeError, match=f'on device "{D}" to a storage on '
                       'different device "cpu"'):
        torch.empty(0, device=D).set_(torch.zeros(4).storage())
    with pytest.raises(RuntimeError, match=f'on device "{D}" to a storage on '
                       'different device "cpu"'):
        torch.empty(0, device=D).set_(torch.zeros(4))
    with pytest.raises(RuntimeError, match='on device "cpu" to a storage on different device'):
        torch.empty(0).set_(torch.zeros(4, device=D).storage())
    with pytest.raises(RuntimeError, match='on device "cpu" to a storage on different device'):
        torch.empty(0).set_(torch.zeros(4, device=D))


def test_set_storage_keeps_other_calls_intact():
    x = torch.arange(6.0)
    y = torch.empty(0).set_(x.storage(), 2, (2,), (2,))
    assert y.tolist() == [2.0, 4.0]
    assert torch.Tensor.set_.__doc__


# --- resize_ ---

RESIZES = {
    "shrink": ((2, 3), None),
    "same": ((2, 3, 4, 5), None),
    "grow": ((7, 30), None),
    "grow_big": ((1000,), None),
    "zero": ((0,), None),
    "channels_last": ((2, 3, 4, 5), CL),
    "grow_channels_last": ((3, 4, 5, 6), CL),
    "contiguous_format": ((5, 6), torch.contiguous_format),
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(RESIZES))
def test_resize_(name, kind):
    size, fmt = RESIZES[name]
    rc, xc, rl, xl = pair(kind)
    old_vc, old_vl = rc[:50].view(5, 10), rl[:50].view(5, 10)
    before_c, before_l = xc.clone(), xl.clone()
    kw = {} if fmt is None else dict(memory_format=fmt)
    want, err = same_error(lambda: xc.resize_(size, **kw), lambda: xl.resize_(size, **kw))
    if err is not None:
        return
    got = xl.resize_(size, **kw)
    assert got is xl
    assert got.shape == want.shape and got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()
    assert got._is_view() == want._is_view()
    assert base_slot(got, (rl,)) == base_slot(want, (rc,))
    assert got.storage().size() == want.storage().size()
    assert rl.storage().size() == rc.storage().size()
    assert (got.storage().data_ptr() == rl.storage().data_ptr()) == (
        want.storage().data_ptr() == rc.storage().data_ptr())
    # The old elements keep their values and every older view still sees the storage.
    same_bits(old_vl, old_vc)
    same_bits(before_l, before_c)
    n = min(ROOT_NUMEL, rc.storage().size())
    same_bits(rl.as_strided((n,), (1,), 0), rc.as_strided((n,), (1,), 0))
    # Writes through the resized tensor reach the old views.
    if want.numel():
        got.view(-1)[:3].fill_(-7) if got.is_contiguous() else got.fill_(-7)
        want.view(-1)[:3].fill_(-7) if want.is_contiguous() else want.fill_(-7)
        same_bits(old_vl, old_vc)


def test_resize_grow_then_views_share_new_storage():
    for dev in ("cpu", D):
        a = torch.arange(4.0, device=dev)
        v = a[1:]
        a.resize_(10)
        a[6:] = 3
        assert v.storage().data_ptr() == a.storage().data_ptr()
        assert v.storage().size() == 10
        assert a[:4].tolist() == [0.0, 1.0, 2.0, 3.0]
        v2 = v.as_strided((4,), (2,), 2)
        assert v2.tolist()[-1] == 3.0


def test_resize_of_view_grows_shared_storage():
    out = {}
    for dev in ("cpu", D):
        a = torch.arange(6.0, device=dev)
        v = a[2:]
        v.resize_(8)
        v[4:] = 9
        out[dev] = (a.storage().size(), v.storage_offset(), v[:4].cpu(), a.cpu())
    assert out["cpu"][0] == out[D][0] == 10
    assert out["cpu"][1] == out[D][1]
    assert torch.equal(out["cpu"][2], out[D][2])
    assert torch.equal(out["cpu"][3], out[D][3])


def test_resize_as_():
    for dev in ("cpu", D):
        a = torch.arange(6.0, device=dev)
        a.resize_as_(torch.empty(2, 2, device=dev).t())
        assert a.shape == (2, 2) and a.stride() == (2, 1)


# --- allocation: strides and storage sizes as CPU ---

STRIDED = [((4, 4), (1, 4)), ((2, 3), (0, 1)), ((2, 3), (1, 0)), ((0, 3), (1, 7)),
           ((3, 4), (10, 2)), ((2, 2, 2), (1, 1, 1)), ((), ()), ((5,), (3,)),
           ((2, 3, 4), (1, 8, 2))]


@pytest.mark.parametrize("size,stride", STRIDED, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16, torch.bool])
def test_empty_strided(size, stride, dtype):
    c = torch.empty_strided(size, stride, dtype=dtype)
    x = torch.empty_strided(size, stride, dtype=dtype, device=D)
    assert x.shape == c.shape and x.stride() == c.stride()
    assert x.storage_offset() == 0
    assert x.is_contiguous() == c.is_contiguous()
    assert x.storage().size() == c.storage().size()
    assert x.storage().nbytes() == c.storage().nbytes()
    assert not x._is_view()


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 3, 1, 1), (2, 1, 4, 5), (0, 3, 2, 2)])
def test_empty_channels_last(size):
    c = torch.empty(size, memory_format=CL)
    x = torch.empty(size, device=D, memory_format=CL)
    assert x.stride() == c.stride()
    assert x.is_contiguous() == c.is_contiguous()
    assert x.is_contiguous(memory_format=CL) == c.is_contiguous(memory_format=CL)
    assert x.storage().size() == c.storage().size()


def test_empty_channels_last_3d():
    c = torch.empty(2, 3, 4, 5, 6, memory_format=torch.channels_last_3d)
    x = torch.empty(2, 3, 4, 5, 6, device=D, memory_format=torch.channels_last_3d)
    assert x.stride() == c.stride()
    assert x.is_contiguous(memory_format=torch.channels_last_3d)


LIKES = {
    "empty_like": lambda x: torch.empty_like(x),
    "zeros_like": lambda x: torch.zeros_like(x),
    "ones_like": lambda x: torch.ones_like(x),
    "full_like": lambda x: torch.full_like(x, 2.5),
    "rand_like": lambda x: torch.rand_like(x),
    "empty_like_contig": lambda x: torch.empty_like(x, memory_format=torch.contiguous_format),
    "empty_like_cl": lambda x: torch.empty_like(x, memory_format=CL),
    "zeros_like_int": lambda x: torch.zeros_like(x, dtype=torch.int32),
    "clone": lambda x: x.clone(),
    "clone_contig": lambda x: x.clone(memory_format=torch.contiguous_format),
    "contiguous": lambda x: x.contiguous(),
    "contiguous_cl": lambda x: x.contiguous(memory_format=CL),
    "to_dtype": lambda x: x.to(torch.float64),
    "new_empty": lambda x: x.new_empty((3, 2)),
    "new_zeros": lambda x: x.new_zeros((3, 2)),
}
LIKE_INPUTS = dict(KINDS, expanded=lambda r: r[:20].view(1, 1, 4, 5).expand(2, 3, 4, 5),
                   permuted=lambda r: r[:120].view(2, 3, 4, 5).permute(0, 2, 3, 1))


@pytest.mark.parametrize("kind", list(LIKE_INPUTS))
@pytest.mark.parametrize("name", list(LIKES))
def test_like_preserves_strides(name, kind):
    fn = LIKES[name]
    rc = root()
    xc, xl = LIKE_INPUTS[kind](rc), LIKE_INPUTS[kind](rc.to(D))
    want, got = fn(xc), fn(xl)
    assert got.device == D and got.dtype == want.dtype
    assert got.shape == want.shape and got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()
    assert got._is_view() == want._is_view()
    if name in ("zeros_like", "ones_like", "full_like", "clone", "clone_contig", "contiguous",
                "contiguous_cl", "to_dtype", "new_zeros", "zeros_like_int"):
        same_bits(got, want)
    if name in ("contiguous", "contiguous_cl") and want.data_ptr() == xc.data_ptr():
        assert got.data_ptr() == xl.data_ptr()


@pytest.mark.parametrize("kind", list(LIKE_INPUTS))
def test_to_device_preserves_strides(kind):
    xc = LIKE_INPUTS[kind](root())
    xl = xc.to(D)
    back = xl.cpu()
    assert xl.stride() == xc.clone().stride()
    assert back.stride() == xc.clone().stride()
    same_bits(xl, xc)
