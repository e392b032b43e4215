"""NOTE [Superseded writes]: an in-place write that a later write of the whole buffer
replaces is inlined into that write (`buf.mul_(m); buf.add_(g)`, `grad.zero_(); grad += g`),
one step at a time, so loops of in-place ops fuse in pairs. Kernel counts exact; values
against CPU torch."""
import torch

import loom

D = loom.device


def run(fn, *tensors):
    """fn on CPU copies and on Loom copies of `tensors`; returns the Loom kernels it took."""
    cpu = [t.clone() for t in tensors]
    dev = [t.to(D) for t in tensors]
    loom.sync()
    loom.reset_metrics()
    fn(*dev)
    loom.sync()
    kernels = loom.metrics()["kernels_run"]
    fn(*cpu)
    for c, d in zip(cpu, dev):
        torch.testing.assert_close(d.cpu(), c)
    return kernels


def test_in_place_pairs_fuse():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(1000, generator=g), torch.randn(1000, generator=g)

    def momentum(b, grad):
        b.mul_(0.9)
        b.add_(grad)

    def zero_then_accumulate(grad, new):
        grad.zero_()
        grad += new

    assert run(momentum, x, y) == 1
    assert run(zero_then_accumulate, x, y) == 1


def test_loops_of_in_place_ops_fuse_in_pairs():
    x = torch.arange(100.0)

    def adds(n):
        def fn(t):
            for _ in range(n):
                t.add_(1)
        return fn

    assert run(adds(6), x) == 3
    assert run(adds(7), x) == 4


def test_a_partial_write_is_not_inlined():
    x = torch.arange(100.0)

    def fn(t):
        t[::2].mul_(2)
        t.add_(1)

    assert run(fn, x) == 2


def test_sgd_momentum_step_kernels_per_parameter():
    # SGD with weight decay, momentum and nesterov: the momentum buffer (scaled, then the
    # decayed gradient added), stored beside the parameter by its kernel (NOTE [Sibling
    # stores]): one kernel.
    torch.manual_seed(0)
    w0 = torch.randn(32, 27)
    x = torch.randn(8, 32)
    ws = []
    for dev in ("cpu", D):
        w = w0.clone().to(dev).requires_grad_()
        opt = torch.optim.SGD([w], lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                              foreach=True)
        for step in range(3):
            opt.zero_grad()
            (x.to(dev) @ w).square().sum().backward()
            if dev != "cpu":
                loom.sync()
                loom.reset_metrics()
            opt.step()
            if dev != "cpu":
                loom.sync()
                if step == 2:
                    m = loom.metrics()
                    assert (m["kernels_run"], m["sibling_stores"]) == (1, 1)
        ws.append(w.detach().cpu())
    # The products run on oneDNN's sgemm, eager's on OpenBLAS: sums in another order.
    torch.testing.assert_close(ws[1], ws[0], rtol=1e-4, atol=1e-4)
