"""Bad input on Loom gets the CPU's exception: the same type and, where asked, the same
first line of its message."""
import pytest


def raises_like_cpu(on_cpu, on_loom, first_line=True, expected=Exception):
    """on_cpu() raises (an `expected`); on_loom() raises the same type."""
    with pytest.raises(expected) as want:
        on_cpu()
    with pytest.raises(type(want.value)) as got:
        on_loom()
    if first_line:
        assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


def outcome_like_cpu(on_cpu, on_loom, **tolerances):
    """Where the running torch decides between an error and a result (a kernel one release
    lacks): on_loom() raises as on_cpu() does, or both return equal tensors."""
    import torch
    try:
        want = on_cpu()
    except Exception:  # noqa: BLE001
        raises_like_cpu(on_cpu, on_loom)
        return
    got = on_loom()
    pairs = zip(got, want) if isinstance(want, (tuple, list)) else [(got, want)]
    for g, w in pairs:
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        torch.testing.assert_close(g.cpu(), w, **tolerances)
