"""addmv, addbmm, glu, prelu, renorm, logspace, kaiser_window, tril/triu_indices, F.unfold/F.fold and
Tensor.unfold's gradient on Loom against the CPU: values, shapes, strides, out= and
in-place forms, gradients and errors. None of them falls back to the CPU."""
import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def on(dev, args):
    return [a.to(dev) if isinstance(a, torch.Tensor) else a for a in args]


def same(fn, *args, grad=False, rtol=1e-5, atol=1e-6):
    """fn on CPU and on Loom: values, shapes, strides (and input gradients), or the error."""
    try:
        want = fn(*args)
    except Exception as e:  # noqa: BLE001 - compare whatever the CPU raises
        with pytest.raises(type(e)) as info:
            fn(*on(D, args))
        assert str(info.value).split("\n")[0] == str(e).split("\n")[0]
        return
    loom.reset_metrics()
    dev_args = on(D, args)
    if grad:
        args = [a.clone().requires_grad_() if isinstance(a, torch.Tensor) and a.is_floating_point()
                else a for a in args]
        dev_args = [a.detach().clone().to(D).requires_grad_() if isinstance(a, torch.Tensor)
                    and a.is_floating_point() else a for a in on(D, args)]
        want = fn(*args)
    got = fn(*dev_args)
    assert got.shape == want.shape and got.dtype == want.dtype and got.stride() == want.stride()
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=rtol, atol=atol, equal_nan=True)
    if grad:
        g = torch.linspace(-1, 1, want.numel(), dtype=want.dtype).reshape(want.shape)
        want.backward(g)
        got.backward(g.to(D))
        for a, b in zip(dev_args, args):
            if isinstance(a, torch.Tensor) and a.grad is not None:
                torch.testing.assert_close(a.grad.cpu(), b.grad, rtol=rtol, atol=atol)
    assert loom.metrics()["fallbacks"] == {}


def test_addmv_and_addbmm():
    s, m, v = torch.randn(5), torch.randn(5, 7), torch.randn(7)
    same(torch.addmv, s, m, v, grad=True)
    same(lambda a, b, c: torch.addmv(a, b, c, beta=0.5, alpha=2), s, m, v)
    same(lambda a, b, c: torch.addmv(a, b, c, beta=0), torch.full((5,), float("nan")), m, v)
    same(lambda a, b, c: a.clone().addmv_(b, c), s, m.t().contiguous().t(), v)
    same(lambda a, b, c: torch.addmv(a, b, c, out=torch.empty(0, device=a.device)), s, m, v)
    same(torch.addmv, torch.randn(1), m, v)  # broadcast self
    same(torch.addmv, s, torch.randn(5, 0), torch.randn(0))
    same(torch.addmv, s, m, torch.randn(6))  # the CPU's shape error
    b1, b2 = torch.randn(3, 4, 6), torch.randn(3, 6, 5)
    same(torch.addbmm, torch.randn(4, 5), b1, b2, grad=True)
    same(lambda a, b, c: torch.addbmm(a, b, c, beta=0.25, alpha=-1), torch.randn(5), b1, b2)
    same(lambda a, b, c: a.clone().addbmm_(b, c), torch.randn(4, 5), b1, b2)
    same(lambda a, b, c: torch.addbmm(a, b, c, out=torch.empty(0, device=a.device)),
         torch.randn(4, 5), b1.transpose(1, 2).contiguous().transpose(1, 2), b2)
    same(torch.addbmm, torch.randn(4, 5), torch.randn(0, 4, 6), torch.randn(0, 6, 5))
    same(torch.addbmm, torch.randn(4, 5), b1, torch.randn(2, 6, 5))
    same(torch.addbmm, torch.randn(4, 5), b1, torch.randn(3, 7, 5))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu(dim):
    x = torch.randn(4, 6, 8)
    same(lambda t: F.glu(t, dim), x, grad=True)
    same(lambda t: F.glu(t, dim), x.transpose(1, 2), grad=True)
    same(lambda t: torch.glu(t, dim, out=torch.empty(0, device=t.device)), x)
    same(lambda t: F.glu(t, dim), torch.randn(3, 5, 7))  # odd: the CPU's error
    same(lambda t: F.glu(t), torch.randn(4, 6, dtype=torch.bfloat16), rtol=1e-2, atol=1e-2)


def test_prelu():
    x = torch.randn(4, 3, 5, 5)
    same(F.prelu, x, torch.tensor([0.25]), grad=True)
    same(F.prelu, x, torch.tensor([0.1, -0.2, 0.3]), grad=True)
    same(F.prelu, x.to(memory_format=torch.channels_last), torch.tensor([0.1, -0.2, 0.3]), grad=True)
    same(F.prelu, torch.randn(7), torch.tensor([0.5]), grad=True)
    same(F.prelu, torch.tensor(-2.0), torch.tensor([0.5]), grad=True)
    same(F.prelu, x, torch.tensor([0.1, 0.2]))  # mismatch: the CPU's error
    same(F.prelu, x, torch.ones(3, 1))


@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_renorm(p):
    x = torch.randn(5, 4, 3) * 3
    for dim in (0, 1, -1):
        same(lambda t: torch.renorm(t, p, dim, 2.0), x, grad=True)
    same(lambda t: t.clone().renorm_(p, 0, 1.0), x)
    same(lambda t: torch.renorm(t, p, 1, 1.5, out=torch.empty(0, device=t.device)), x)
    same(lambda t: torch.renorm(t, p, 0, 1.0), x.to(torch.bfloat16), rtol=1e-2, atol=1e-2)
    same(lambda t: torch.renorm(t, p, 0, 1.0), torch.randn(5))  # one dim: the CPU's error
    same(lambda t: torch.renorm(t, -1, 0, 1.0), x)


def test_logspace_and_triangle_indices():
    for dtype in (torch.float32, torch.float64, torch.int64, torch.bfloat16, torch.complex64):
        for steps in (0, 1, 2, 7, 50):
            want = torch.logspace(-2, 3, steps, base=2.0, dtype=dtype)
            got = torch.logspace(-2, 3, steps, base=2.0, dtype=dtype, device=D).cpu()
            torch.testing.assert_close(got, want, rtol=1e-5 if dtype != torch.bfloat16 else 1e-2,
                                       atol=0)
    with pytest.raises(RuntimeError, match="logspace_cpu"):
        torch.logspace(0, 1, 5, dtype=torch.half, device=D)
    for row, col, off in [(4, 5, 0), (5, 3, -1), (3, 6, 2), (0, 3, 0)]:
        for fn in (torch.tril_indices, torch.triu_indices):
            got = fn(row, col, off, device=D)
            assert got.device.type == D.type
            assert torch.equal(got.cpu(), fn(row, col, off))


def test_kaiser_window():
    # Its I0 is Loom's (a double power series, an ulp or so from the CPU's Chebyshev one).
    # torch 1.13 rounds each step of a bfloat16 window and has no float16 kernel; 2.x
    # computes both in float.
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        for length in (0, 1, 2, 5, 64, 101):
            for periodic in (True, False):
                for beta in (12.0, 0.5, 5.0):
                    try:
                        want = torch.kaiser_window(length, periodic, beta, dtype=dtype)
                    except RuntimeError as e:
                        with pytest.raises(RuntimeError) as got:
                            torch.kaiser_window(length, periodic, beta, dtype=dtype, device=D)
                        assert str(got.value) == str(e)
                        continue
                    got = torch.kaiser_window(length, periodic, beta, dtype=dtype, device=D)
                    assert got.device.type == D.type and got.dtype == dtype
                    assert got.shape == want.shape and got.stride() == want.stride()
                    assert got.storage_offset() == want.storage_offset()
                    torch.testing.assert_close(got.cpu(), want)
    assert torch.equal(torch.kaiser_window(9, device=D).cpu(),
                       torch.kaiser_window(9, True, 12.0, device=D).cpu())
    assert torch.equal(torch.kaiser_window(9, False, device=D).cpu(),
                       torch.kaiser_window(9, False, 12.0, device=D).cpu())
    for bad in (lambda d: torch.kaiser_window(5, dtype=torch.int64, device=d),
                lambda d: torch.kaiser_window(-1, device=d)):
        with pytest.raises(RuntimeError) as want:
            bad("cpu")
        with pytest.raises(RuntimeError) as got:
            bad(D)
        assert str(got.value).replace(str(D), "cpu") == str(want.value)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=(2, 3), stride=2, padding=1),
                                dict(kernel_size=2, dilation=2, stride=(1, 3))])
def test_unfold_and_fold(kw):
    x = torch.randn(2, 3, 7, 8)
    same(lambda t: F.unfold(t, **kw), x, grad=True)
    same(lambda t: F.unfold(t, **kw), x[0], grad=True)
    cols = F.unfold(x, **kw)
    same(lambda t: F.fold(t, (7, 8), **kw), cols, grad=True)
    same(lambda t: F.fold(t, (7, 8), **kw), cols[1], grad=True)
    same(lambda t: F.unfold(t, kernel_size=9), x)  # larger than the input: the CPU's error


def test_tensor_unfold_gradient_with_overlapping_windows():
    x = torch.randn(4, 11)
    for size, step in [(3, 1), (3, 2), (2, 3), (4, 4)]:
        same(lambda t: t.unfold(1, size, step) * 2, x, grad=True)
        same(lambda t: t.unfold(0, 2, 1).sum(-1), x, grad=True)
