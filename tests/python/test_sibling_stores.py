"""Pending whole writes of live buffers that a kernel's value reads at their own elements
are stored by that kernel, beside its output (NOTE [Sibling stores] in
csrc/schedule/realize.cpp): an optimizer step is one kernel per parameter. Values,
aliasing and faults stay as on the CPU."""
import pytest
import torch

import loom

D = loom.device


def counted(fn):
    """Kernels run and sibling stores made by fn() and its realization alone."""
    loom.sync()
    loom.reset_metrics()
    fn()
    loom.sync()
    m = loom.metrics()
    return m["kernels_run"], m["sibling_stores"]


def train(dev, make_opt, steps=3, clip=True):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(),
                                torch.nn.Linear(32, 4)).to(dev)
    opt = make_opt(model.parameters())
    x, y = torch.randn(8, 16).to(dev), torch.randn(8, 4).to(dev)
    counts = []
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        if dev == "cpu":
            opt.step()
        else:
            counts.append(counted(opt.step))
    state = [t.cpu() for s in opt.state.values() for t in s.values() if torch.is_tensor(t)]
    return [p.detach().cpu() for p in model.parameters()] + state, counts


@pytest.mark.parametrize("name,make_opt,per_param", [
    ("adamw", lambda p: torch.optim.AdamW(p, lr=1e-2), 2),  # the two moments
    ("adam", lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=0.1), 2),
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), 1),  # the momentum
])
def test_optimizer_step_is_one_kernel_per_parameter(name, make_opt, per_param):
    want, _ = train("cpu", make_opt, clip=False)
    got, counts = train(D, make_opt, clip=False)
    for a, b in zip(want, got):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    # Four parameters: one kernel each, its optimizer state stored beside it. The first
    # step creates the state.
    assert counts[1:] == [(4, 4 * per_param)] * 2


def test_clipped_adamw_matches_cpu():
    want, _ = train("cpu", lambda p: torch.optim.AdamW(p, lr=1e-2), steps=4)
    got, _ = train(D, lambda p: torch.optim.AdamW(p, lr=1e-2), steps=4)
    for a, b in zip(want, got):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


def run_pair(dev, body):
    m = torch.arange(6.0).to(dev)
    p = torch.ones(6).to(dev)
    if dev != "cpu":
        loom.sync()
    return body(m, p)


@pytest.mark.parametrize("case", ["old_value_held", "read_flipped", "read_twice"])
def test_siblings_keep_other_readers_right(case):
    def body(m, p):
        old = m * 1 if case == "old_value_held" else None  # pending, reads m's old contents
        m.mul_(0.5).add_(1)  # m: a live buffer's pending whole write
        if case == "read_flipped":
            p.add_(m * m.flip(0))  # m at its own elements and reversed
        elif case == "read_twice":
            p.add_(m).mul_(m)
        else:
            p.add_(m)
        out = [p.cpu(), m.cpu()]
        if old is not None:
            out.append(old.cpu())
        return out

    want = run_pair("cpu", body)
    got = run_pair(D, body)
    for a, b in zip(want, got):
        assert torch.equal(a, b)


def test_sibling_is_not_written_when_the_kernel_faults():
    m = torch.arange(4.0).to(D)
    w = torch.randn(3).to(D)
    loom.sync()
    m.mul_(2).add_(1)  # pending: 1, 3, 5, 7
    with pytest.raises(IndexError):
        idx = (m * 0 + 5).long()  # computed lazily: out of range for w
        (w[idx] + m).cpu()  # the gather's check faults in the kernel that also reads m
    assert torch.equal(m.cpu(), torch.tensor([1.0, 3.0, 5.0, 7.0]))
