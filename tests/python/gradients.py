"""The gradient of one op on the CPU and on Loom, for tests that also look at how Loom
computed it (metrics() then counts the Loom backward alone)."""
import torch

import loom


def cpu_and_loom_gradients(op, x, grad_seed, grad_format=torch.contiguous_format):
    """d op(x) / dx applied to a random output gradient (seeded by grad_seed, in
    grad_format), on the CPU and on Loom: [cpu, loom], each on its own device."""
    grads = []
    for dev in ("cpu", loom.device):
        t = x.detach().to(dev).requires_grad_()
        y = op(t)
        w = torch.randn(y.shape, generator=torch.Generator().manual_seed(grad_seed))
        w = w.contiguous(memory_format=grad_format).to(dev)
        loom.sync()
        loom.reset_metrics()
        grads.append(torch.autograd.grad(y, t, w)[0])
    return grads
