"""The gradient scaler's kernels (_amp_foreach_non_finite_check_and_unscale_,
_amp_update_scale_; csrc/aten/ops_fused_optim.cpp): lazy on Loom, against the CPU's own on
torch 2.x and against their rules written out (torch 1.13's CPU has no kernels for them)."""
import pytest
import torch

import loom

D = loom.device
INF, NAN = float("inf"), float("nan")


def unscale(dev, values, found=0.0, inv=0.5):
    grads = [torch.tensor(v, device=dev) for v in values]
    found_inf = torch.tensor([found], device=dev)
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf,
                                                     torch.tensor([inv], device=dev))
    return [g.cpu() for g in grads], found_inf.cpu()


@pytest.mark.parametrize("values,found", [
    ([[1.0, 2.0, 3.0], [4.0]], 0.0), ([[1.0, INF], [2.0]], 0.0), ([[1.0], [NAN, 2.0]], 0.0),
    ([[1.0], []], 1.0), ([[-INF]], 0.0)])
def test_unscale_and_check(values, found):
    grads, found_inf = unscale(D, values, found)
    for g, v in zip(grads, values):
        torch.testing.assert_close(g, torch.tensor(v) * 0.5, equal_nan=True)
    finite = all(torch.isfinite(torch.tensor(v)).all() for v in values)
    assert found_inf.item() == (found if finite else 1.0)
    try:
        want = unscale("cpu", values, found)
    except (RuntimeError, NotImplementedError):  # 1.13: CUDA's only
        return
    for g, w in zip(grads, want[0]):
        torch.testing.assert_close(g, w, equal_nan=True)
    assert torch.equal(found_inf, want[1])


@pytest.mark.parametrize("found,tracker", [(0.0, 0), (0.0, 1), (1.0, 1), (1.0, 0), (0.0, 5)])
@pytest.mark.parametrize("scale", [8.0, 3e38])
def test_update_scale(found, tracker, scale):
    res = {}
    for dev in ("cpu", D):
        s = torch.tensor([scale], device=dev)
        t = torch.tensor([tracker], dtype=torch.int32, device=dev)
        try:
            r = torch._amp_update_scale_(s, t, torch.tensor([found], device=dev), 2.0, 0.5, 2)
        except (RuntimeError, NotImplementedError):  # 1.13's CPU
            continue
        assert r is s
        res[dev] = (s.cpu(), t.cpu())
    got_scale, got_tracker = res[D]
    # the rule: backoff and reset on inf; else grow (if finite) and reset at the interval
    if found:
        want = (scale * 0.5, 0)
    elif tracker + 1 == 2:
        want = (scale * 2.0 if scale * 2.0 < 3.4e38 else scale, 0)
    else:
        want = (scale, tracker + 1)
    torch.testing.assert_close(got_scale, torch.tensor([want[0]]))
    assert got_tracker.tolist() == [want[1]]
    if "cpu" in res:
        assert torch.equal(res["cpu"][0], got_scale) and torch.equal(res["cpu"][1], got_tracker)


def test_update_scale_errors():
    s, t = torch.tensor([1.0], device=D), torch.tensor([0], dtype=torch.int32, device=D)
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
        torch._amp_update_scale_(s, t.long(), torch.zeros(1, device=D), 2.0, 0.5, 2)
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_([s], torch.zeros(2, device=D),
                                                         torch.ones(1, device=D))
