"""The CPU's scalar forms as a reference. The CPU runs an op's vectorized body over
contiguous runs and its scalar form elsewhere (and on the tail of a run). Where the two
disagree, Loom computes the scalar form, which is the op's definition and CUDA's: torch
2.x's complex quotient is one (its AVX-512 body multiplies by an approximate reciprocal of
the larger part, and gives NaN for x / 0 where c10::complex gives inf). Tests of such ops
compare Loom with the CPU run on operands it cannot vectorize over."""
import torch


def unvectorized(t):
    """t's values in a tensor whose last dim steps by 2 elements, which the CPU's loops
    cannot vectorize over; 0-dim tensors and numbers as they are."""
    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return t
    wide = torch.empty(tuple(t.shape) + (2,), dtype=t.dtype)
    wide[..., 0] = t
    return wide[..., 0]


def scalar_form(fn, *args):
    """fn(*args) laid out as the CPU lays it out, with the values of its scalar forms."""
    want = fn(*args)
    values = fn(*[unvectorized(a) for a in args])
    out = torch.empty_strided(want.shape, want.stride(), dtype=want.dtype)
    return out.copy_(values)


def _complex_division_forms_differ():
    a = torch.full((64,), 1 + 1j, dtype=torch.complex64)
    b = torch.zeros(64, dtype=torch.complex64)
    return not torch.equal((a / b).isnan(), (unvectorized(a) / unvectorized(b)).isnan())


# torch 2.x: the vectorized quotient is NaN for x / 0, the scalar one inf (1.13: NaN both).
COMPLEX_DIVISION_FORMS_DIFFER = _complex_division_forms_differ()
