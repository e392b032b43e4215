"""Values an op computes together (NOTE [Cohorts]): max pooling's values and indices, the
two sums of a batch or group norm's backward, max/min along a dim. The kernel that stores
one stores the others still pending, and their reductions share one loop (NOTE [Joint
reductions]). Values against CPU torch; kernel counts exact."""
import pytest
import torch
import torch.nn.functional as F

import loom


def kernels(fn):
    """Runs fn; returns (its result, (kernels run, values stored beside their outputs))."""
    loom.reset_metrics()
    r = fn()
    m = loom.metrics()
    return r, (m["kernels_run"], m["cohort_stores"])


# The forward stores the indices beside the values (the 3d and adaptive pools gather their
# windows from the realized input first); the backward reads them.
FORWARD = {"max_pool2d": (1, 1), "max_pool3d": (2, 1), "adaptive_max_pool2d": (2, 1)}
BACKWARD = {"max_pool2d": (2, 0), "max_pool3d": (3, 0), "adaptive_max_pool2d": (3, 0)}


@pytest.mark.parametrize("pool", ["max_pool2d", "max_pool3d", "adaptive_max_pool2d"])
def test_pool_indices_are_stored_by_the_forward(pool):
    torch.manual_seed(0)
    shape = (2, 3, 8, 8) if pool != "max_pool3d" else (2, 3, 4, 8, 8)
    x = torch.randn(*shape)
    x[0, 0, 0, :2] = 1.0  # ties: the first maximum wins
    x[1, 1, 1, 1] = float("nan")
    op = {"max_pool2d": lambda t: F.max_pool2d(t, 2),
          "max_pool3d": lambda t: F.max_pool3d(t, 2),
          "adaptive_max_pool2d": lambda t: F.adaptive_max_pool2d(t, (3, 5))}[pool]
    xl = x.to(loom.device).requires_grad_()
    loom.sync()
    y = op((xl * 2).relu())
    yc, fwd = kernels(lambda: y.cpu())
    assert fwd == FORWARD[pool]
    g = torch.randn_like(yc)
    y.backward(g.to(loom.device))
    grad, bwd = kernels(lambda: xl.grad.cpu())
    xr = x.clone().requires_grad_()
    yr = op((xr * 2).relu())
    yr.backward(g)
    torch.testing.assert_close(yc, yr.detach(), equal_nan=True)
    torch.testing.assert_close(grad, xr.grad, equal_nan=True)
    assert bwd == BACKWARD[pool]


def test_indices_not_read_are_not_computed():
    x = torch.randn(2, 3, 8, 8).to(loom.device)
    loom.sync()
    with torch.no_grad():
        y = F.max_pool2d(x * 2, 2)  # max_pool2d drops the indices
    yc, n = kernels(lambda: y.cpu())
    assert n == (1, 0)
    torch.testing.assert_close(yc, F.max_pool2d(x.cpu() * 2, 2))


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_sums_in_one_pass(affine):
    torch.manual_seed(0)
    x = torch.randn(4, 3, 6, 6)
    g = torch.randn(4, 3, 6, 6)
    bn = torch.nn.BatchNorm2d(3, affine=affine)
    bnl = torch.nn.BatchNorm2d(3, affine=affine).to(loom.device)
    xl = x.to(loom.device).requires_grad_()
    loom.sync()
    yl = bnl(xl * 1.5)
    yl.backward(g.to(loom.device))
    grads = [xl.grad] + ([bnl.weight.grad, bnl.bias.grad] if affine else [])
    out, n = kernels(lambda: [t.cpu() for t in grads])
    assert loom.metrics()["reductions_recomputed"] == 0
    # The forward's statistics (2 kernels) and inverse deviation; the backward's two sums in
    # one kernel; the input gradient; with parameters, a mean for the input gradient and
    # the parameters' gradients copied from the stored sums.
    assert n == ((8, 1) if affine else (5, 1))
    xr = x.clone().requires_grad_()
    bn(xr * 1.5).backward(g)
    ref = [xr.grad] + ([bn.weight.grad, bn.bias.grad] if affine else [])
    for a, b in zip(out, ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_batch_norm_eval_backward_parameter_sums_in_one_pass():
    torch.manual_seed(0)
    x, g = torch.randn(4, 3, 5, 5), torch.randn(4, 3, 5, 5)
    bn = torch.nn.BatchNorm2d(3).eval()
    bn.running_mean.uniform_(-1, 1)
    bnl = torch.nn.BatchNorm2d(3).to(loom.device).eval()
    bnl.load_state_dict(bn.state_dict())
    xl = x.to(loom.device).requires_grad_()
    bnl(xl).backward(g.to(loom.device))
    loom.sync()
    bn(x.requires_grad_()).backward(g)
    torch.testing.assert_close(bnl.weight.grad.cpu(), bn.weight.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(bnl.bias.grad.cpu(), bn.bias.grad, rtol=1e-4, atol=1e-5)


def test_group_norm_backward():
    torch.manual_seed(0)
    x, g = torch.randn(4, 6, 5, 5), torch.randn(4, 6, 5, 5)
    gn = torch.nn.GroupNorm(3, 6)
    gnl = torch.nn.GroupNorm(3, 6).to(loom.device)
    xl = x.to(loom.device).requires_grad_()
    gnl(xl).backward(g.to(loom.device))
    xr = x.clone().requires_grad_()
    gn(xr).backward(g)
    for a, b in [(xl.grad, xr.grad), (gnl.weight.grad, gn.weight.grad), (gnl.bias.grad, gn.bias.grad)]:
        torch.testing.assert_close(a.cpu(), b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", [torch.max, torch.min])
def test_max_dim_values_and_indices_in_one_kernel(op):
    x = torch.randn(5, 7)
    x[2, 3] = float("nan")
    xl = x.to(loom.device)
    loom.sync()
    v, i = op(xl * 3, 1)
    vc, n = kernels(lambda: v.cpu())
    assert n == (1, 1)
    ic, n = kernels(lambda: i.cpu())
    assert n == (1, 0)  # a copy of the stored indices
    rv, ri = op(x * 3, 1)
    torch.testing.assert_close(vc, rv, equal_nan=True)
    assert torch.equal(ic, ri)


def test_training_steps_left_pending_recompute_no_reduction():
    """A step whose parameters and gradients stay pending until the next step's loss is
    read: the batch norm backward's input gradient met its second sum through the fusion
    that stored the first beside it, before that kernel stored it, and then computed the
    sum again for every element (a 6 s kernel in the CIFAR example)."""
    def net():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 8, 3, padding=1, bias=False),
            torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(), torch.nn.Linear(8, 3))

    torch.manual_seed(1)
    xs, ys = torch.randn(3, 8, 3, 8, 8), torch.randint(0, 3, (3, 8))
    losses = []
    for dev in ["cpu", loom.device]:
        model = net().to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
        loom.reset_metrics()
        losses.append([])
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
            loss.backward()
            opt.step()
            losses[-1].append(loss.item())  # realizes the forward only: the rest stays pending
        if dev != "cpu":
            assert loom.metrics()["reductions_recomputed"] == 0
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-5)


def test_pooled_values_read_by_a_reduction_are_stored_with_their_indices():
    """Max pooling's values read only by a reduction (the average pool after a CNN's last
    block) are stored beside their indices, which the backward reads: inlined into the
    average, the windows ran there and again in a kernel for the indices."""
    def net():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, padding=1, bias=False), torch.nn.BatchNorm2d(4),
            torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(), torch.nn.Linear(4, 3))

    torch.manual_seed(1)
    x, y = torch.randn(2, 3, 8, 8), torch.tensor([0, 2])
    ref = net()
    F.cross_entropy(ref(x), y).backward()
    model = net().to(loom.device)
    xl, yl = x.to(loom.device), y.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    F.cross_entropy(model(xl), yl).backward()
    grads = [p.grad.cpu() for p in model.parameters()]
    m = loom.metrics()
    # The pooled values with their indices, and batch norm's two backward sums. The relu's
    # gradient is not stored on its own: batch norm's statistics, read through a broadcast,
    # do not count as arrays it reads whole (wide_reads). The linear layer's product is
    # issued as it is recorded (NOTE [Library calls issued when recorded]): the pooled
    # values come first, over batch norm's statistics stored on their own, and still
    # bring their indices. The cross entropy's gradient over its 2x3 logits is one kernel
    # (NOTE [Whole reductions]).
    assert (m["kernels_run"], m["cohort_stores"], m["reductions_recomputed"]) == (12, 2, 0)
    for a, p in zip(grads, ref.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-4, atol=1e-5)


def test_pooled_indices_under_stored_batch_norm_statistics_add_no_kernel():
    """conv -> batch norm -> relu -> max pool -> conv: the pool's values, read by the second
    convolution, are stored with their indices beside them, both over batch norm's
    statistics as stored first; the window maximum the indices compare against is not
    stored by a kernel of its own."""
    def forward(grad):
        torch.manual_seed(0)
        m = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, padding=1)).to(loom.device)
        x = torch.randn(4, 3, 16, 16).to(loom.device)
        loom.sync()
        loom.reset_metrics()
        with torch.set_grad_enabled(grad):
            y = m(x)
        y.cpu()
        return loom.metrics()["kernels_run"], loom.metrics()["cohort_stores"]

    (with_indices, stored), (without, _) = forward(True), forward(False)
    assert stored == 1
    assert with_indices == without
