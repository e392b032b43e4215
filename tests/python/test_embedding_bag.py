"""embedding_bag (sum, mean, max; per-sample weights, padding_idx, include_last_offset) and
embedding's max_norm on Loom against the CPU: outputs, the auxiliary outputs autograd
keeps (offset2bag, bag sizes, max indices), gradients, and errors. Nothing falls back."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import raises_like_cpu

D = loom.device
MODES = ["sum", "mean", "max"]


def table(dtype=torch.float32):
    w = torch.randn(10, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    w[3, 1] = float("nan")  # a NaN first in one bag, later in another
    w[5] = w[2]  # ties between rows
    return w.to(dtype)


INDICES = torch.tensor([1, 2, 5, 4, 3, 0, 9, 5, 2, 2, 7])
OFFSETS = torch.tensor([0, 3, 3, 6, 8])  # an empty bag


def both(fn):
    """fn(device) on the CPU and on Loom, the Loom results moved to the CPU."""
    want = fn("cpu")
    loom.reset_metrics()
    got = fn(D)
    got = [g.cpu() for g in got] if isinstance(got, (tuple, list)) else got.cpu()
    assert loom.metrics()["fallbacks"] == {}
    return got, want


CASES = [c for c in itertools.product(MODES, [None, 2], [False, True], [False, True])
         if not (c[3] and c[0] != "sum")]


@pytest.mark.parametrize("mode,pad,last,weighted", CASES)
def test_outputs_and_gradients(mode, pad, last, weighted):
    offsets = torch.cat([OFFSETS, torch.tensor([11])]) if last else OFFSETS
    psw = torch.rand(11, generator=torch.Generator().manual_seed(1)) if weighted else None
    code = MODES.index(mode)
    got, want = both(lambda dev: torch.ops.aten._embedding_bag(
        table().float().to(dev), INDICES.to(dev), offsets.to(dev), False, code, False,
        None if psw is None else psw.to(dev), last, -1 if pad is None else pad))
    for g, w in zip(got, want):  # output, offset2bag, bag_size, max_indices
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, equal_nan=True)
    grad_out = torch.randn(want[0].shape, generator=torch.Generator().manual_seed(2))

    def backward(dev):
        w = table().nan_to_num().float().to(dev).requires_grad_()
        p = None if psw is None else psw.detach().clone().to(dev).requires_grad_()
        out = F.embedding_bag(INDICES.to(dev), w, offsets.to(dev), mode=mode, padding_idx=pad,
                              include_last_offset=last, per_sample_weights=p)
        out.backward(grad_out.to(dev))
        return [w.grad] + ([p.grad] if p is not None else [])
    got, want = both(backward)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])
@pytest.mark.parametrize("mode", MODES)
def test_dtypes_2d_input_and_strided_table(mode, dtype):
    w = table(dtype).t().contiguous().t()  # column-major table
    x = torch.tensor([[1, 2, 4], [4, 3, 9]])
    got, want = both(lambda dev: F.embedding_bag(x.to(dev), w.to(dev), mode=mode))
    tol = 1e-3 if dtype == torch.float16 else 1e-7
    torch.testing.assert_close(got, want, equal_nan=True, rtol=tol, atol=tol)


def test_empty_indices_and_bags():
    for mode in MODES:
        got, want = both(lambda dev: F.embedding_bag(
            torch.tensor([], dtype=torch.long).to(dev), table().to(dev),
            torch.tensor([0, 0, 0]).to(dev), mode=mode))
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq(mode):
    x = torch.tensor([3, 1, 3, 3, 7, 1, 0, 7])
    offsets = torch.tensor([0, 2, 5])

    def grad(dev):
        w = table().nan_to_num().to(dev).requires_grad_()
        F.embedding_bag(x.to(dev), w, offsets.to(dev), mode=mode, scale_grad_by_freq=True).sum().backward()
        return w.grad
    got, want = both(grad)
    torch.testing.assert_close(got, want)


def test_int32_indices_and_offsets():
    got, want = both(lambda dev: F.embedding_bag(
        INDICES.int().to(dev), table().to(dev), OFFSETS.int().to(dev), mode="max"))
    torch.testing.assert_close(got, want, equal_nan=True)


BAD = {
    "first offset": lambda dev: F.embedding_bag(INDICES.to(dev), table().to(dev),
                                                torch.tensor([1, 3]).to(dev)),
    "last offset": lambda dev: F.embedding_bag(INDICES.to(dev), table().to(dev),
                                               torch.tensor([0, 12]).to(dev)),
    "index range": lambda dev: F.embedding_bag(torch.tensor([1, 10]).to(dev), table().to(dev),
                                               torch.tensor([0]).to(dev)),
    # the CPU's float path (fbgemm) words it otherwise; its other paths as Loom does
    "index range, double": lambda dev: F.embedding_bag(
        torch.tensor([1, 10]).to(dev), table().double().to(dev), torch.tensor([0]).to(dev)),
    "float indices": lambda dev: torch.ops.aten._embedding_bag(
        table().to(dev), INDICES.float().to(dev), OFFSETS.to(dev)),
    "weights with mean": lambda dev: F.embedding_bag(
        INDICES.to(dev), table().to(dev), OFFSETS.to(dev), mode="mean",
        per_sample_weights=torch.ones(11).to(dev)),
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_match_cpu(name):
    raises_like_cpu(lambda: BAD[name]("cpu"), lambda: BAD[name](D),
                    first_line=name not in ("float indices", "index range"))


def test_computed_index_out_of_range_faults_at_realization():
    x = (torch.tensor([1.0, 12.0]).to(D) * 1.0).long()  # computed: known only in the kernel
    out = F.embedding_bag(x, table().to(D), torch.tensor([0]).to(D))
    with pytest.raises(RuntimeError, match="found idx to be 12"):
        out.cpu()


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_embedding_max_norm_renormalizes_named_rows(norm_type):
    x = torch.tensor([[1, 4, 1], [9, 0, 4]])

    def run(dev):
        w = (table().nan_to_num() * 3).to(dev)
        out = F.embedding(x.to(dev), w, max_norm=1.5, norm_type=norm_type)
        return [out, w]  # the table itself is renormalized in place
    got, want = both(run)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
