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
