"""What differs between PyTorch releases (NOTE [Torch releases] in csrc/aten/torch_compat.h).

CI runs these on Debian's 1.13; the GPU machine's torch 2.11 runs them too
(tests/torch2/run.sh), where the backend is renamed "loom" and registers its hooks.
"""
import copy
import warnings

import pytest
import torch

import loom

TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
RENAMED = TORCH >= (2, 1)


def test_device_name():
    if RENAMED:
        assert loom.device == torch.device("loom", 0)
        assert torch.device("loom:0") == loom.device
    else:
        assert loom.device == torch.device("privateuseone", 0)
    x = torch.arange(6.0).to(loom.device)
    assert x.device == loom.device
    assert str(loom.device.type) in repr(x)


@pytest.mark.skipif(not RENAMED, reason="torch < 2.1 has no generated backend methods")
def test_generated_methods():
    x = torch.arange(4.0)
    y = x.loom()
    assert y.is_loom and not x.is_loom
    assert torch.equal(y.cpu(), x)


def test_cpu_autograd_after_import():
    # On torch 2.x the renamed backend is the accelerator whose streams autograd's engine
    # asks for (the hooks' hasPrimaryContext), CPU-only graphs included.
    w = torch.randn(3, 2, requires_grad=True)
    (w * 2).sum().backward()
    assert torch.equal(w.grad, torch.full((3, 2), 2.0))


def test_loom_autograd_matches_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    on_loom = copy.deepcopy(model).to(loom.device)
    x = torch.randn(5, 8)
    model(x).square().mean().backward()
    on_loom(x.to(loom.device)).square().mean().backward()
    for p, q in zip(model.parameters(), on_loom.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-5, atol=1e-6)


def test_manual_seed_reaches_loom_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.manual_seed(7)
        a = torch.randn(64, device=loom.device).cpu()
        torch.manual_seed(7)
        b = torch.randn(64, device=loom.device).cpu()
    assert torch.equal(a, b)


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std_integer_correction(correction):
    x = torch.randn(7, 5, dtype=torch.float64)
    y = x.to(loom.device)
    for fn in (torch.var, torch.std):
        torch.testing.assert_close(fn(y, 1, correction=correction).cpu(),
                                   fn(x, 1, correction=correction))
    v, m = torch.var_mean(y, 0, correction=correction)
    ev, em = torch.var_mean(x, 0, correction=correction)
    torch.testing.assert_close(v.cpu(), ev)
    torch.testing.assert_close(m.cpu(), em)


@pytest.mark.skipif(TORCH < (2, 0), reason="torch 1.13's correction is an integer")
def test_var_fractional_correction():
    x = torch.randn(6, 9, dtype=torch.float64)
    y = x.to(loom.device)
    torch.testing.assert_close(torch.var(y, 1, correction=0.5).cpu(),
                               torch.var(x, 1, correction=0.5))
    s, m = torch.std_mean(y, None, correction=1.5)
    es, em = torch.std_mean(x, None, correction=1.5)
    torch.testing.assert_close(s.cpu(), es)
    torch.testing.assert_close(m.cpu(), em)


def test_foreach_norm():
    xs = [torch.randn(4, 3), torch.randn(5)]
    got = torch._foreach_norm([x.to(loom.device) for x in xs], 2)
    for g, e in zip(got, torch._foreach_norm(xs, 2)):
        torch.testing.assert_close(g.cpu(), e)


def _foreach_norm_takes_dtype():
    try:
        torch._foreach_norm([torch.ones(1)], 2, dtype=torch.float64)
    except TypeError:
        return False
    return True


@pytest.mark.skipif(not _foreach_norm_takes_dtype(), reason="_foreach_norm's dtype came after 1.13")
def test_foreach_norm_dtype():
    xs = [torch.randn(4, 3), torch.randn(5)]
    got = torch._foreach_norm([x.to(loom.device) for x in xs], 2, dtype=torch.float64)
    for g, e in zip(got, torch._foreach_norm(xs, 2, dtype=torch.float64)):
        assert g.dtype == torch.float64
        torch.testing.assert_close(g.cpu(), e)


@pytest.mark.skipif(not hasattr(torch.Tensor, "_lazy_clone"), reason="torch 2.x's op")
def test_lazy_clone_is_a_copy():
    base = torch.arange(12.0).to(loom.device)
    view = base[2:].view(2, 5).t()
    c = view._lazy_clone()
    assert (c.size(), c.stride(), c.storage_offset()) == (view.size(), view.stride(), 2)
    base.mul_(10)  # the clone keeps the old value; the view sees the write
    assert torch.equal(c.cpu(), torch.arange(2.0, 12.0).view(2, 5).t())
    assert torch.equal(view.cpu(), 10 * torch.arange(2.0, 12.0).view(2, 5).t())


@pytest.mark.skipif(TORCH < (2, 0), reason="torch 1.13 resizes PrivateUse1 storages on the CPU")
def test_storage_resize_keeps_leading_bytes():
    x = torch.arange(8, dtype=torch.int32).to(loom.device)
    s = x.untyped_storage()
    s.resize_(12 * 4)
    assert s.nbytes() == 48
    y = torch.empty(0, dtype=torch.int32, device=loom.device).set_(s, 0, (8,), (1,))
    assert torch.equal(y.cpu(), torch.arange(8, dtype=torch.int32))
    s.resize_(3 * 4)
    z = torch.empty(0, dtype=torch.int32, device=loom.device).set_(s, 0, (3,), (1,))
    assert torch.equal(z.cpu(), torch.arange(3, dtype=torch.int32))
