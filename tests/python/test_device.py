"""The device itself: allocation, views, copies across the boundary, scalars, fallbacks.

Views must report exactly what CPU reports; copies into Loom stay lazy and copies out
realize.
"""
import pytest
import torch

import loom

DEV = loom.device

ROUND_TRIP_DTYPES = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
]


def sample(dtype, shape=(3, 4)):
    x = torch.arange(-5, -5 + torch.Size(shape).numel()).reshape(shape)
    if dtype == torch.bool:
        return x % 3 == 0
    if dtype == torch.uint8:
        return (x + 5).to(dtype)
    if dtype.is_floating_point:
        return (x * 0.75).to(dtype)
    return x.to(dtype)


def same_layout(a, b):
    assert a.shape == b.shape
    assert a.stride() == b.stride()
    assert a.storage_offset() == b.storage_offset()
    assert a.is_contiguous() == b.is_contiguous()


# --- allocation ---

def test_device_is_loom():
    x = torch.empty(2, 3, device=DEV)
    assert x.device == DEV
    assert x.shape == (2, 3)
    assert x.stride() == (3, 1)
    assert x.dtype == torch.float32


def test_import_is_silent():
    # Registering a kernel twice for one op makes the dispatcher print a warning on stderr at
    # every import (view_as_real's did until session 33).
    import os
    import subprocess
    import sys
    python = os.path.dirname(loom.__file__) + "/.."
    done = subprocess.run([sys.executable, "-c", "import torch, loom"], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=python, LOOM_DEBUG="0"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == ""


def test_empty_strided_keeps_strides():
    x = torch.empty_strided((4, 4), (1, 4), device=DEV)
    assert x.stride() == (1, 4)
    assert not x.is_contiguous()


def test_empty_channels_last():
    x = torch.empty(2, 3, 4, 5, device=DEV, memory_format=torch.channels_last)
    c = torch.empty(2, 3, 4, 5, memory_format=torch.channels_last)
    same_layout(x, c)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64, torch.complex32, torch.complex64,
                                   torch.complex128])
def test_every_dense_dtype_is_supported(dtype):
    t = torch.empty(3, dtype=dtype, device=DEV)
    assert t.dtype == dtype and t.cpu().dtype == dtype


def test_empty_with_a_quantized_dtype():
    # As on the CPU: a quantized tensor whose quantizer is unknown, so that even a copy
    # into it fails (on the CPU too).
    e = torch.empty(3, dtype=torch.qint8, device=DEV)
    assert e.is_quantized and e.dtype == torch.qint8 and e.shape == (3,)
    q = torch.quantize_per_tensor(torch.tensor([1.0, -2.0, 3.0]), 0.5, 1, torch.qint8)
    with pytest.raises(RuntimeError, match="UnknownQuantizer"):
        e.copy_(q.to(DEV))


def test_zero_size_tensors():
    x = torch.empty(0, 3, device=DEV)
    assert x.shape == (0, 3)
    assert x.cpu().shape == (0, 3)
    assert torch.zeros(0).to(DEV).cpu().shape == (0,)


# --- views: metadata only, must match CPU exactly ---

VIEWS = {
    "t": lambda x: x.t(),
    "step_slice": lambda x: x[::2, 1::2],
    "row": lambda x: x[1],
    "column": lambda x: x[:, 2],
    "view": lambda x: x.view(4, 6),
    "view_flat": lambda x: x.view(-1),
    "as_strided": lambda x: x.as_strided((3, 3), (5, 2), 1),
    "permute": lambda x: x.view(2, 3, 4).permute(2, 0, 1),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "expand": lambda x: x[:1].expand(5, 6),
    "narrow": lambda x: x.narrow(1, 2, 3),
    "diagonal": lambda x: x.diagonal(),
    "unfold": lambda x: x.unfold(1, 2, 2),
    "transpose_of_slice": lambda x: x[1:, ::3].transpose(0, 1),
    "reshape_viewable": lambda x: x.reshape(2, 12),
    "chunk": lambda x: x.chunk(2, dim=1)[1],
    "squeeze": lambda x: x.view(1, 4, 1, 6).squeeze(),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_layout_matches_cpu(name):
    fn = VIEWS[name]
    c = torch.empty(4, 6)
    lv = fn(torch.empty(4, 6, device=DEV))
    cv = fn(c)
    same_layout(lv, cv)
    assert lv.device == DEV
    assert lv._base is not None or lv._is_view()


def test_views_share_storage():
    x = torch.empty(4, 6, device=DEV)
    assert x.t().data_ptr() == x.data_ptr()
    assert x[1:].data_ptr() == x.data_ptr() + 6 * x.element_size()


def test_as_strided_out_of_bounds_raises_like_cpu():
    with pytest.raises(RuntimeError, match="out of bounds for storage of size") as cpu_err:
        torch.empty(4).as_strided((3,), (2,), 0)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size") as loom_err:
        torch.empty(4, device=DEV).as_strided((3,), (2,), 0)
    assert str(cpu_err.value) == str(loom_err.value)


def test_view_incompatible_raises_like_cpu():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.empty(4, 6, device=DEV).t().view(24)


def test_resize_grows_and_keeps_contents():
    x = torch.arange(6.0).to(DEV)
    x.resize_(10)
    assert x.shape == (10,)
    assert torch.equal(x[:6].cpu(), torch.arange(6.0))


def test_resize_shrinks_in_place():
    x = torch.arange(6.0).to(DEV)
    x.resize_(2, 2)
    assert x.stride() == (2, 1)
    assert torch.equal(x.cpu(), torch.arange(4.0).view(2, 2))


def test_set_shares_storage():
    x = torch.arange(6.0).to(DEV)
    y = torch.empty(0, device=DEV)
    y.set_(x)
    assert y.is_set_to(x)
    assert torch.equal(y.cpu(), torch.arange(6.0))


# --- copies and scalars ---

def test_round_trip():
    x = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(x.to(DEV).cpu(), x)


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=str)
def test_round_trip_dtypes(dtype):
    x = sample(dtype)
    y = x.to(DEV)
    assert y.dtype == dtype
    back = y.cpu()
    assert back.dtype == dtype
    assert torch.equal(back, x)


def test_round_trip_scalar_tensor():
    x = torch.tensor(2.5)
    y = x.to(DEV)
    assert y.dim() == 0
    assert torch.equal(y.cpu(), x)


def test_round_trip_of_strided_view():
    x = sample(torch.float32, (4, 6))
    y = x.to(DEV)
    for fn in VIEWS.values():
        assert torch.equal(fn(y).cpu(), fn(x))


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=str)
def test_item(dtype):
    x = sample(dtype, (5,))
    y = x.to(DEV)
    for i in range(5):
        assert y[i].item() == x[i].item()
        assert type(y[i].item()) is type(x[i].item())


def test_copy_into_transposed_view():
    base = torch.zeros(3, 4, device=DEV)
    src = sample(torch.float32, (4, 3))
    base.t().copy_(src)
    assert torch.equal(base.cpu(), src.t())
    assert torch.equal(base.t().cpu(), src)


def test_copy_into_slice_is_seen_by_aliases():
    x = torch.zeros(4, 6, device=DEV)
    alias = x.view(24)
    x[1].copy_(torch.arange(6.0))
    x[:, 0].copy_(torch.full((4,), -1.0))
    expected = torch.zeros(4, 6)
    expected[1] = torch.arange(6.0)
    expected[:, 0] = -1.0
    assert torch.equal(alias.cpu(), expected.view(24))
    assert torch.equal(x.cpu(), expected)


def test_copy_from_cpu_broadcasts_and_converts():
    x = torch.empty(3, 4, dtype=torch.float64, device=DEV)
    x.copy_(torch.arange(4, dtype=torch.int32))
    assert torch.equal(x.cpu(), torch.arange(4.0, dtype=torch.float64).expand(3, 4))


def test_copy_into_overlapping_destination_raises_like_cpu():
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.zeros(1).expand(3).copy_(torch.ones(3))
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.zeros(1, device=DEV).expand(3).copy_(torch.ones(3))


def test_copy_loom_to_loom_with_dtype_change():
    x = sample(torch.float32).to(DEV)
    y = torch.empty(3, 4, dtype=torch.int32, device=DEV)
    y.copy_(x)
    assert torch.equal(y.cpu(), sample(torch.float32).to(torch.int32))
    assert torch.equal(x.to(torch.float16).cpu(), sample(torch.float32).to(torch.float16))


def test_copy_loom_to_loom_broadcast_into_view():
    x = torch.zeros(4, 6, device=DEV)
    row = torch.arange(4.0).to(DEV)
    x.t().copy_(row)
    assert torch.equal(x.cpu(), torch.arange(4.0).view(4, 1).expand(4, 6))


def test_copy_loom_to_loom_bad_broadcast_raises():
    with pytest.raises(RuntimeError, match="must match"):
        torch.zeros(3, device=DEV).copy_(torch.zeros(4, device=DEV))


def test_read_before_write_keeps_old_value():
    x = torch.arange(4.0).to(DEV)
    snapshot = torch.empty(4, device=DEV)
    snapshot.copy_(x)
    x.copy_(torch.full((4,), 9.0))
    assert torch.equal(snapshot.cpu(), torch.arange(4.0))
    assert torch.equal(x.cpu(), torch.full((4,), 9.0))


def test_neg_and_conj_views():
    x = sample(torch.float32).to(DEV)
    assert torch.equal(x.conj().cpu(), sample(torch.float32))
    assert torch.equal(torch._neg_view(x).cpu(), -sample(torch.float32))
    y = torch.empty(3, 4, device=DEV)
    y.copy_(torch._neg_view(x))
    assert torch.equal(y.cpu(), -sample(torch.float32))


# --- observability ---

def test_metrics_has_counters(fresh_metrics):
    m = fresh_metrics()
    for key in ["kernels_run", "kernels_compiled", "cache_hits", "disk_hits", "realizations",
                "buffers_allocated", "bytes_allocated", "live_nodes", "fallbacks"]:
        assert key in m
    assert isinstance(m["fallbacks"], dict)


def test_fallback_is_counted_and_can_be_an_error(fresh_metrics, monkeypatch):
    # LAPACK's singular value decomposition has no Loom kernel.
    x = torch.tensor([[2.0, 0.5, 0.0], [0.25, 1.0, 3.0]])
    monkeypatch.setenv("LOOM_FALLBACK", "allow")
    got = torch.linalg.svdvals(x.to(DEV))
    torch.testing.assert_close(got.cpu(), torch.linalg.svdvals(x))
    assert sum(n for op, n in fresh_metrics()["fallbacks"].items() if "svd" in op) == 1
    monkeypatch.setenv("LOOM_FALLBACK", "error")
    with pytest.raises(NotImplementedError, match="svd"):
        torch.linalg.svdvals(x.to(DEV))


def test_sync_runs():
    torch.ones(3).to(DEV)
    loom.sync()


def test_printing_realizes():
    x = torch.arange(6.0).to(DEV)
    assert repr(x).startswith("tensor([0., 1., 2., 3., 4., 5.]")
    assert "privateuseone" in repr(x) or "loom" in repr(x)


def test_no_composite_op_is_shadowed():
    # A PrivateUse1 kernel for a CompositeImplicitAutograd op hides the composite from
    # AutogradPrivateUse1 too; without an autograd kernel of its own the op then fails
    # with "Could not run ... from the 'AutogradPrivateUse1' backend".
    C = torch._C
    shadowed = []
    for s in C._jit_get_all_schemas():
        if not s.name.startswith("aten::"):
            continue
        name = s.name + ("." + s.overload_name if s.overload_name else "")
        try:
            if (C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")
                    and C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
                    and not C._dispatch_has_kernel_for_dispatch_key(name, "AutogradPrivateUse1")):
                shadowed.append(name)
        except RuntimeError:
            pass  # schemas without a dispatcher entry
    assert shadowed == []


def test_legacy_new():
    # torch 1.13's Tensor.new() refuses PrivateUse1; loom gives it the CPU's forms.
    x, c = torch.zeros(2, device=DEV), torch.zeros(2)
    for args in [(), (2, 3), (torch.Size([4, 1]),), ([3, 4],), ((3, 4),), ([[1, 2]],), (0, 3, 3)]:
        got, want = x.new(*args), c.new(*args)
        assert got.device == DEV and got.dtype == want.dtype and got.shape == want.shape
        if not (not args or all(isinstance(a, int) for a in args) or isinstance(args[0], torch.Size)):
            assert torch.equal(got.cpu(), want)
    y = torch.ones(3, device=DEV)
    alias = x.new(y)
    alias[0] = 5
    assert y.cpu().tolist() == [5, 1, 1]
    assert x.new(x.storage()).shape == (2,)
    with pytest.raises(TypeError):
        x.new(torch.ones(3, dtype=torch.int64, device=DEV))
    with pytest.raises(RuntimeError, match="legacy constructor expects device type"):
        x.new(2, device="cpu")
    assert torch.zeros(2).new(2).device.type == "cpu"


def test_device_module():
    # torch.<device type> is Loom's device module, as torch.cuda is CUDA's; torch 2.x's
    # storage moves enter its `device` context (torch.load onto Loom).
    m = getattr(torch, DEV.type)
    assert m.is_available() and m.device_count() == 1 and m.current_device() == 0
    with m.device(0), m.device(DEV), m.device(None):
        x = torch.ones(2, device=DEV) * 2
    assert x.tolist() == [2.0, 2.0]
    m.set_device(0)
    with pytest.raises(RuntimeError, match="Loom has one device"):
        m.device(1)
    with pytest.raises(RuntimeError, match="Loom has one device"):
        m.set_device(torch.device(DEV.type, 1))
