"""Kernel plans (NOTE [Kernel plans] in csrc/runtime/plan.h): a graph run before runs from
its plan, without lowering, and a plan never stands in for a graph that differs in what
its kernel would compute. The suite runs with LOOM_CHECK_PLANS=1 (conftest.py), so each
hit here is also lowered afresh and compared."""
import os
import subprocess
import sys

import torch

import loom

DEV = loom.device


def run_twice(fn, *args):
    outs = []
    for _ in range(2):
        loom.reset_metrics()
        outs.append(fn(*args).cpu())
    return outs, loom.metrics()


def test_a_repeated_graph_runs_from_its_plan():
    x = torch.randn(64, 33)
    xl = x.to(DEV)
    loom.sync()
    (a, b), m = run_twice(lambda t: (t * 2 + 1).exp().sum(1), xl)
    assert torch.equal(a, b)
    torch.testing.assert_close(b, (x * 2 + 1).exp().sum(1))
    assert m["plan_hits"] == m["kernels_run"] == 1
    assert m["kernels_compiled"] == 0


def test_new_float_scalars_reuse_the_plan():
    x = torch.randn(1000)
    xl = x.to(DEV)
    loom.sync()
    for step in range(1, 5):
        loom.reset_metrics()
        got = (xl * (0.5 * step) + 1.0 / step).cpu()
        torch.testing.assert_close(got, x * (0.5 * step) + 1.0 / step)
        if step > 1:
            assert loom.metrics()["plan_hits"] == 1


def test_equal_constants_that_later_differ():
    # The renderer may share work between equal constants: a plan made while two
    # constants were equal must not serve a run where they differ.
    x = torch.randn(8, 16)
    xl = x.to(DEV)
    loom.sync()
    for a, b in [(2.0, 2.0), (2.0, 3.0), (3.0, 3.0), (1.5, 0.25)]:
        got = ((xl * a).sum(1, keepdim=True) + xl * b).cpu()
        torch.testing.assert_close(got, (x * a).sum(1, keepdim=True) + x * b)


def test_different_buffers_same_graph():
    xs = [torch.randn(100) for _ in range(3)]
    ls = [x.to(DEV) for x in xs]
    loom.sync()
    loom.reset_metrics()
    for x, xl in zip(xs, ls):
        torch.testing.assert_close((xl.sin() + 1).cpu(), x.sin() + 1)
    assert loom.metrics()["plan_hits"] == 2


def test_one_buffer_read_twice_or_two_buffers():
    # x + x (one buffer, two loads) and x + y (two buffers) have the same graph shape:
    # which buffers coincide is part of a plan's key.
    x, y = torch.randn(50), torch.randn(50)
    xl, yl = x.to(DEV), y.to(DEV)
    loom.sync()
    for _ in range(2):
        torch.testing.assert_close((xl[1:] * 2 + xl[:-1]).cpu(), x[1:] * 2 + x[:-1])
        torch.testing.assert_close((xl[1:] * 2 + yl[:-1]).cpu(), x[1:] * 2 + y[:-1])


def test_in_place_and_out_of_place_writes():
    # An in-place update reads the buffer it writes; the same graph written elsewhere
    # must not be taken for it.
    base = torch.randn(40)
    for _ in range(2):
        a = base.to(DEV)
        loom.sync()
        a.mul_(3).add_(1)
        b = base.to(DEV)
        c = (b * 3 + 1)
        loom.sync()
        torch.testing.assert_close(a.cpu(), base * 3 + 1)
        torch.testing.assert_close(c.cpu(), base * 3 + 1)
        torch.testing.assert_close(b.cpu(), base)


def test_views_and_offsets_are_part_of_the_key():
    x = torch.randn(6, 8)
    xl = x.to(DEV)
    loom.sync()
    for v, ref in [(xl[1:], x[1:]), (xl[:-1], x[:-1]), (xl.t(), x.t()), (xl[:, ::2], x[:, ::2])]:
        torch.testing.assert_close((v * 2).cpu(), ref * 2)
        torch.testing.assert_close((v * 2).cpu(), ref * 2)


def test_index_errors_still_raise_from_a_plan():
    x = torch.arange(10.).to(DEV)
    for idx in ([1, 2, 3], [1, 20, 3]):
        i = torch.tensor(idx).to(DEV)
        loom.sync()
        if max(idx) < 10:
            assert x[i].tolist() == [float(v) for v in idx]
        else:
            try:
                x[i].tolist()
            except IndexError:
                pass
            else:
                raise AssertionError("no IndexError")
    # the in-range graph once more, from its plan
    i = torch.tensor([4, 5, 6]).to(DEV)
    assert x[i].tolist() == [4., 5., 6.]


def test_training_steps_run_from_plans():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    ref = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    ref.load_state_dict(model.state_dict())
    model.to(DEV)
    opts = [torch.optim.Adam(m.parameters(), lr=1e-2) for m in (model, ref)]
    x, y = torch.randn(32, 12), torch.randint(0, 3, (32,))
    xl, yl = x.to(DEV), y.to(DEV)
    for step in range(4):
        loom.reset_metrics()
        for m, opt, xi, yi in ((model, opts[0], xl, yl), (ref, opts[1], x, y)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(xi), yi).backward()
            opt.step()
        loom.sync()
        m = loom.metrics()
        if step >= 2:
            assert m["kernels_compiled"] == 0
            assert m["plan_hits"] == m["kernels_run"]
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.cpu(), q, rtol=1e-4, atol=1e-5)


def test_plans_off():
    prog = ("import torch, loom\n"
            "x = torch.arange(6.).to(loom.device)\n"
            "for _ in range(3): assert (x * 2).tolist() == [0., 2., 4., 6., 8., 10.]\n"
            "print(loom.metrics()['plan_hits'], loom.metrics()['kernels_run'])\n")
    env = dict(os.environ, LOOM_PLANS="0")
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["0", "3"]


def step_loop(x, out, steps):
    """An RNN-like loop over time steps: reads rows of x at each step's offset, reads a
    stepped, flipped and interleaved view there, and writes out's row in place."""
    for t in steps:
        h = torch.tanh(x[t] + out[t - 1] * 0.5 + x[t + 1].flip(-1))
        a, b = x[t, :, ::2], x[t, :, 1::2]
        h = h + torch.cat([a * b, a - b], -1)
        out[t] = h
        out[t, 1:] += out[t - 1, :-1]
    return out


def test_time_steps_share_one_compiled_kernel_per_step_kind():
    # NOTE [Rebased buffers] (codegen/lower.cpp): offsets are taken out of the source.
    x = torch.randn(41, 3, 6, dtype=torch.float64)
    out = torch.zeros(41, 3, 6, dtype=torch.float64)
    xl, outl = x.to(DEV), out.to(DEV)
    loom.sync()
    step_loop(x, out, range(1, 20))
    step_loop(xl, outl, range(1, 20))
    torch.testing.assert_close(outl.cpu(), out)
    loom.sync()
    loom.reset_metrics()
    step_loop(x, out, range(20, 40))
    step_loop(xl, outl, range(20, 40))
    torch.testing.assert_close(outl.cpu(), out)
    m = loom.metrics()
    assert m["kernels_compiled"] == 0 and m["kernels_run"] >= 20


def test_rows_of_a_pending_random_tensor_share_one_kernel():
    # The row's offset joins the random stream's offset slot (NOTE [Random arguments]).
    torch.manual_seed(7)
    r = torch.rand(50, 129, device=DEV)
    want = r.cpu()
    torch.manual_seed(7)
    r = torch.rand(50, 129, device=DEV)
    rows = [(r[t] * 3).cpu() for t in range(25)]
    loom.reset_metrics()
    rows += [(r[t] * 3).cpu() for t in range(25, 50)]
    assert loom.metrics()["kernels_compiled"] == 0
    torch.testing.assert_close(torch.stack(rows), want * 3, rtol=0, atol=0)
