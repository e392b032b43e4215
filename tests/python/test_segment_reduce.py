"""segment_reduce and its backward on Loom against the CPU: every reduction, by lengths and
by offsets, along the first axis and an inner one (segments per row), with an initial
value, empty segments, NaN, zeros and ties; the CPU's errors. Nothing falls back."""
import itertools

import pytest
import torch

import loom
from cpu_errors import raises_like_cpu

D = loom.device
REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def data(shape):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-3, 4, shape, generator=g).double() / 2  # ties and zeros
    x.view(-1)[5] = float("nan")
    return x


def run(dev, x, reduce, spec, by_offsets, axis, initial, unsafe=False):
    kw = {"offsets" if by_offsets else "lengths": spec.to(dev)}
    return torch.segment_reduce(x.to(dev), reduce, axis=axis, initial=initial, unsafe=unsafe, **kw)


LENGTHS_0 = torch.tensor([2, 0, 3, 1])  # along a first axis of 6
LENGTHS_1 = torch.tensor([[1, 2, 2], [0, 4, 1], [5, 0, 0]])  # per row, along an axis of 5


def spec_for(axis, by_offsets):
    lengths = LENGTHS_0 if axis == 0 else LENGTHS_1
    if not by_offsets:
        return lengths
    return torch.cat([torch.zeros(lengths.shape[:-1] + (1,), dtype=lengths.dtype),
                      lengths.cumsum(-1)], -1)


@pytest.mark.parametrize("reduce,by_offsets,axis,initial",
                         list(itertools.product(REDUCTIONS, [False, True], [0, 1], [None, 2.5])))
def test_values_and_gradients(reduce, by_offsets, axis, initial):
    x = data((6, 3) if axis == 0 else (3, 5, 2))
    spec = spec_for(axis, by_offsets)
    want = run("cpu", x, reduce, spec, by_offsets, axis, initial)
    loom.reset_metrics()
    got = run(D, x, reduce, spec, by_offsets, axis, initial).cpu()
    assert loom.metrics()["fallbacks"] == {}
    torch.testing.assert_close(got, want, equal_nan=True)
    g = torch.randn(want.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    grads = []
    for dev in ("cpu", D):
        xs = x.clone().to(dev).requires_grad_()
        run(dev, xs, reduce, spec, by_offsets, axis, initial).backward(g.to(dev))
        grads.append(xs.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], equal_nan=True)


def test_unsafe_lengths_and_half_data():
    x = data((6, 3))
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        short = torch.tensor([2, 1])  # covers 3 of 6 rows; the rest gets no gradient
        want = run("cpu", x.to(dtype), "sum", short, False, 0, None, unsafe=True)
        got = run(D, x.to(dtype), "sum", short, False, 0, None, unsafe=True).cpu()
        torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-2, atol=1e-2)


BAD = {
    "negative length": lambda dev: torch.segment_reduce(data((6,)).to(dev), "sum",
                                                        lengths=torch.tensor([7, -1]).to(dev)),
    "lengths sum": lambda dev: torch.segment_reduce(data((6,)).to(dev), "sum",
                                                    lengths=torch.tensor([2, 3]).to(dev)),
    "reduction name": lambda dev: torch.segment_reduce(data((6,)).to(dev), "median",
                                                       lengths=torch.tensor([6]).to(dev)),
    "no segments": lambda dev: torch.segment_reduce(data((6,)).to(dev), "sum"),
    "axis": lambda dev: torch.segment_reduce(data((6, 2)).to(dev), "sum",
                                             lengths=torch.tensor([6]).to(dev), axis=1),
    "integer data": lambda dev: torch.segment_reduce(torch.arange(6).to(dev), "sum",
                                                     lengths=torch.tensor([6]).to(dev)),
}


@pytest.mark.parametrize("name", list(BAD))
def test_errors_match_cpu(name):
    raises_like_cpu(lambda: BAD[name]("cpu"), lambda: BAD[name](D))
