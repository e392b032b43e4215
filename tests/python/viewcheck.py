"""Comparing Loom tensors with CPU ones: layout, view structure, shared storage, values
and errors. Shared by the view and write tests."""
import re

import pytest
import torch

import loom

D = loom.device
CL = torch.channels_last


# --- inputs: the same storage structure on both devices ---
#
# A case starts from a contiguous root of distinct values; an input kind derives the
# tensor under test from the root by the same steps on both devices.

ROOT_NUMEL = 720

KINDS = {
    "contiguous": lambda r: r[:120].view(2, 3, 4, 5),
    "transposed": lambda r: r[:120].view(5, 4, 3, 2).permute(3, 2, 1, 0),
    "sliced": lambda r: r.view(3, 4, 6, 10)[1:, 1:, 1:5, ::2],
    "channels_last": lambda r: r[:120].view(2, 3, 4, 5).contiguous(memory_format=CL),
}


def root(dtype=torch.float32):
    r = torch.arange(ROOT_NUMEL, dtype=torch.float64) - 100
    if dtype == torch.bool:
        return r.remainder(3) == 0
    if dtype == torch.uint8:
        return r.remainder(251).to(dtype)
    return r.to(dtype)


def pair(kind, dtype=torch.float32):
    """(cpu root, cpu input, loom root, loom input) for an input kind."""
    rc = root(dtype)
    rl = rc.to(D)
    return rc, KINDS[kind](rc), rl, KINDS[kind](rl)


def base_slot(t, known):
    """Which of `known` t's _base is: an index, None when t is not a view, or 'other'."""
    if t._base is None:
        return None
    for i, k in enumerate(known):
        if t._base is k:
            return i
    return "other"


def same_bits(got, want):
    assert got.dtype == want.dtype
    got = got.cpu()
    if want.dtype.is_floating_point:  # NaN payloads compare too
        width = {2: torch.int16, 4: torch.int32, 8: torch.int64}[want.element_size()]
        got, want = got.contiguous().view(width), want.contiguous().view(width)
    if not torch.equal(got, want):
        bad = (got != want).nonzero().tolist()
        raise AssertionError(f"{len(bad)} of {want.numel()} elements differ, first at {bad[:4]}:"
                             f" got {got.flatten()[:8].tolist()},"
                             f" want {want.flatten()[:8].tolist()}")


def same_values(got, want):
    """Equal values; floats within an ulp or so, since Loom's exp and friends are its own."""
    assert got.dtype == want.dtype
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got.cpu(), want, rtol=2e-6, atol=1e-6, equal_nan=True)
    else:
        same_bits(got, want)


def check_view(got, want, known_l=(), known_c=()):
    """got (Loom) against want (CPU): layout, view structure, storage sharing and values."""
    assert got.device == D
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()
    if want.dim() == 4:
        assert got.is_contiguous(memory_format=CL) == want.is_contiguous(memory_format=CL)
    assert got._is_view() == want._is_view()
    assert base_slot(got, known_l) == base_slot(want, known_c)
    for kl, kc in zip(known_l, known_c):
        shares = want.storage().data_ptr() == kc.storage().data_ptr()
        got_shares = got.storage().data_ptr() == kl.storage().data_ptr()
        assert got_shares == shares
        if shares and want.numel() and kc.numel():  # an empty tensor's data_ptr is 0
            got_delta, want_delta = got.data_ptr() - kl.data_ptr(), want.data_ptr() - kc.data_ptr()
            assert got_delta == want_delta
    same_bits(got, want)


def check_all(got, want, known_l, known_c):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            check_view(g, w, known_l, known_c)
    else:
        check_view(got, want, known_l, known_c)


def same_error(fn_c, fn_l):
    """Runs fn_c; if it raises, fn_l must raise the same type with a similar message."""
    try:
        want = fn_c()
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)) as info:
            fn_l()
        assert first_words(info.value) == first_words(e), f"{info.value!r} vs {e!r}"
        return None, e
    return want, None


def first_words(e, n=6):
    """The start of an error message, with device-specific type and device names masked."""
    msg = re.sub(r"torch\.(cuda\.)?\w*Tensor|(PrivateUse1|loom)[A-Z]\w*Type|privateuseone(:0)?|cpu",
                 "<T>", str(e))
    return msg.split()[:n]
