"""Per-tensor affine quantized tensors on Loom against CPU torch: storage, views, copies,
dequantize and int_repr. Quantized arithmetic has no Loom kernels."""
import pytest
import torch

import loom

DEV = loom.device
QTYPES = [torch.quint8, torch.qint8, torch.qint32]


def quantized(dtype, shape=(4, 5), scale=0.25, zero_point=3):
    g = torch.Generator().manual_seed(7)
    return torch.quantize_per_tensor(torch.randn(shape, generator=g) * 4, scale, zero_point, dtype)


def same_quantized(got, want):
    assert got.device == DEV and got.is_quantized
    assert (got.dtype, got.shape, got.stride(), got.storage_offset()) == (
        want.dtype, want.shape, want.stride(), want.storage_offset())
    assert (got.qscheme(), got.q_scale(), got.q_zero_point()) == (
        want.qscheme(), want.q_scale(), want.q_zero_point())
    assert torch.equal(got.int_repr().cpu(), want.int_repr())
    assert torch.equal(got.dequantize().cpu(), want.dequantize())


@pytest.mark.parametrize("dtype", QTYPES)
def test_transfers_round_trip(dtype):
    q = quantized(dtype)
    on_loom = q.to(DEV)
    same_quantized(on_loom, q)
    back = on_loom.cpu()
    assert back.device.type == "cpu" and torch.equal(back.int_repr(), q.int_repr())
    assert back.q_scale() == q.q_scale() and back.q_zero_point() == q.q_zero_point()


@pytest.mark.parametrize("dtype", QTYPES)
def test_empty_affine_quantized(dtype):
    e = torch._empty_affine_quantized([2, 3, 4], scale=2, zero_point=3, dtype=dtype, device=DEV)
    c = torch._empty_affine_quantized([2, 3, 4], scale=2, zero_point=3, dtype=dtype)
    assert (e.shape, e.stride(), e.q_scale(), e.q_zero_point(), e.dtype) == (
        c.shape, c.stride(), c.q_scale(), c.q_zero_point(), c.dtype)
    cl = torch._empty_affine_quantized([2, 3, 4, 5], scale=1, zero_point=0, dtype=dtype,
                                       device=DEV, memory_format=torch.channels_last)
    assert cl.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()


VIEWS = {
    "flatten": lambda t: t.flatten(0, -1),
    "view": lambda t: t.view(5, 4),
    "reshape": lambda t: t.reshape(-1),
    "ravel": torch.ravel,
    "t": lambda t: t.t(),
    "row": lambda t: t[1],
    "column": lambda t: t[:, 2],
    "stepped": lambda t: t[::2, 1::2],
    "as_strided": lambda t: t.as_strided((3, 2), (2, 3), 1),
    "unsqueeze": lambda t: t.unsqueeze(1),
}


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("name", list(VIEWS))
def test_views_alias_the_storage(dtype, name):
    q = quantized(dtype)
    on_loom = q.to(DEV)
    v = VIEWS[name](on_loom)
    same_quantized(v, VIEWS[name](q))
    assert v.storage().data_ptr() == on_loom.storage().data_ptr()


def test_copy_through_a_view_is_seen_by_the_base():
    q, other = quantized(torch.quint8), quantized(torch.quint8, zero_point=3)
    a, b = q.to(DEV), other.to(DEV)
    view = a[1:3]
    view.copy_(b[2:4])
    q[1:3].copy_(other[2:4])
    same_quantized(a, q)
    assert torch.equal(a.clone().cpu().int_repr(), q.int_repr())


def test_errors_match_the_cpu():
    q = quantized(torch.quint8).to(DEV)
    with pytest.raises(NotImplementedError):
        q + q
    with pytest.raises(RuntimeError, match="Copying from quantized Tensor to non-quantized"):
        torch.empty(4, 5, device=DEV).copy_(q)
    with pytest.raises(RuntimeError, match="self.scalar_type\(\) == src.scalar_type\(\)"):
        q.copy_(quantized(torch.qint8).to(DEV))
