"""Transposing copies walk their last two loops in tiles (NOTE [Transpose tiles] in
csrc/codegen/render_tiles.cpp): values, strides and what lies around a written view
match the CPU for sizes that are and are not multiples of the tile, across dtypes, thread
splits and views with offsets."""
import pytest
import torch

import loom

D = loom.device


def check(fn, x):
    want = fn(x)
    got = fn(x.to(D)).cpu()
    assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride()
    assert torch.equal(got, want)


@pytest.mark.parametrize("rows,cols", [(512, 1024), (700, 613), (33, 2049), (1000, 16)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int16, torch.uint8])
def test_transposed_copies_match_cpu(rows, cols, dtype):
    x = (torch.randn(rows, cols) * 50).to(dtype)
    check(lambda t: t.t().contiguous(), x)
    check(lambda t: (t.t() * 3).contiguous() if dtype != torch.uint8 else t.t() + 1, x)
    check(lambda t: t[3:, 5:].t().contiguous(), x)  # a view with an offset
    check(lambda t: t.t()[::2].contiguous(), x)


def test_batched_and_written_transposes_match_cpu():
    x = torch.randn(3, 600, 520)
    check(lambda t: t.transpose(1, 2).contiguous(), x)
    check(lambda t: t.permute(2, 0, 1).contiguous(), x)

    def write(t):  # into a transposed view of a larger buffer: the rest stays
        out = torch.full((3, 530, 610), -1.0, device=t.device)
        out[:, 5:525, 7:607].copy_(t.transpose(1, 2))
        return out

    check(write, x)

