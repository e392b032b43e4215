"""Which dtypes pooling, unpooling, group norm, embedding bags, logcumsumexp, threshold,
searchsorted, xlogy, trace, huber_loss and lerp take comes from the running torch's CPU, one call of its op per dtype (torch 2.x added float16,
bfloat16 or integers to several): for each dtype Loom computes what the CPU computes, equal
to it, and raises the CPU's error, at the op, for the rest. Nothing falls back."""
import math

import pytest
import torch
import torch.nn.functional as F

import loom
from cpu_errors import outcome_like_cpu

D = loom.device
DTYPES = [torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.uint8,
          torch.bool, torch.complex64]


def _idx(t):
    return torch.zeros(tuple(t.shape), dtype=torch.long, device=t.device) + \
        torch.arange(t.shape[-1], device=t.device)


OPS = {
    "max_pool2d": lambda t: F.max_pool2d(t, 3, 2, padding=1, return_indices=True),
    "max_pool2d_ceil": lambda t: F.max_pool2d(t, 2, ceil_mode=True, return_indices=True),
    "max_pool3d": lambda t: F.max_pool3d(t.unsqueeze(2).expand(-1, -1, 3, -1, -1).contiguous(), 2,
                                         padding=1, return_indices=True),
    "adaptive_max_pool2d": lambda t: F.adaptive_max_pool2d(t, 3, return_indices=True),
    "adaptive_max_pool3d": lambda t: F.adaptive_max_pool3d(t.unsqueeze(2), 3, return_indices=True),
    "adaptive_avg_pool3d": lambda t: F.adaptive_avg_pool3d(t.unsqueeze(2), 3),
    "max_unpool2d": lambda t: F.max_unpool2d(t, _idx(t), 2, output_size=(14, 12)),
    "max_unpool3d": lambda t: F.max_unpool3d(t.unsqueeze(2), _idx(t.unsqueeze(2)), 1),
    "group_norm": lambda t: F.group_norm(t, 3),
    "embedding_bag": lambda t: F.embedding_bag(torch.tensor([[0, 1], [2, 5]], device=t.device),
                                               t[0, 0]),
    "logcumsumexp": lambda t: t.logcumsumexp(3),
    "avg_pool2d": lambda t: F.avg_pool2d(t, 2),
    "adaptive_avg_pool2d": lambda t: F.adaptive_avg_pool2d(t, 3),
    "threshold": lambda t: F.threshold(t, 0.1, 2.0),
    "searchsorted": lambda t: torch.searchsorted(t.flatten().sort()[0], t),
    "xlogy": lambda t: torch.xlogy(t, t),
    "trace": lambda t: t[0, 0].trace(),
    "huber_loss": lambda t: F.huber_loss(t, t * 0.5),
    "lerp": lambda t: torch.lerp(t, t, 0.5),
}


def _input(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 7, 6, generator=g, dtype=torch.float64) * 5
    if dtype == torch.bool:
        return x > 0
    if dtype.is_complex:
        return torch.complex(x, x.flip(-1)).to(dtype)
    return x.to(dtype) if dtype.is_floating_point else x.round().to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(OPS))
def test_dtype_outcome_as_cpu(name, dtype):
    x = _input(dtype)
    loom.reset_metrics()
    # float16/bfloat16: Loom sums in float32 where 2.x's CPU adds in the dtype (adaptive
    # average pooling), an ulp or two apart.
    tol = dict(rtol=2e-2, atol=2e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    on_cpu = lambda: OPS[name](x)  # noqa: E731
    if name in ("lerp", "huber_loss", "trace") and dtype in (torch.float16, torch.bfloat16):
        # Computed as CUDA does where the CPU has no kernel (1.13's float16): float32's, rounded.
        on_cpu = lambda: OPS[name](x.float()).to(dtype)  # noqa: E731
    outcome_like_cpu(on_cpu, lambda: OPS[name](x.to(D)), equal_nan=True, **tol)
    assert loom.metrics()["fallbacks"] == {}


def test_complex_logcumsumexp_special_values():
    """Where the running torch's CPU takes complex input (2.x), the running value steps
    with its complex logaddexp: infinities and NaN as it has them."""
    x = torch.complex(torch.randn(4, 9, dtype=torch.float64), torch.randn(4, 9, dtype=torch.float64))
    x[0, 3] = complex(math.inf, 0)
    x[1, 2] = complex(-math.inf, 1)
    x[2, 5] = complex(math.nan, 0)
    x[3, 1], x[3, 4] = complex(math.inf, 2), complex(math.inf, -1)
    for dtype in (torch.complex64, torch.complex128):
        t = x.to(dtype)
        outcome_like_cpu(lambda: t.logcumsumexp(1), lambda: t.to(D).logcumsumexp(1), equal_nan=True)
