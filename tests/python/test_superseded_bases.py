"""A whole write over a superseded whole write (`m.mul_(b).add_(g)`) computes into the
memory of the value below both when nothing else reads it (NOTE [Superseded bases] in
csrc/schedule/reuse.cpp). Values and aliasing stay as on the CPU: a value that can still
be read is never written."""
import copy

import pytest
import torch

import loom

D = loom.device


def counted(fn):
    """fn()'s result, and the metrics of the kernels it ran."""
    loom.sync()
    loom.reset_metrics()
    out = fn()
    loom.sync()
    return out, loom.metrics()


def tensors(*shape, n=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    cpu = [torch.randn(*shape, generator=g) for _ in range(n)]
    return cpu, [t.to(D) for t in cpu]


def adam_like(p, m, v, g):
    m.mul_(0.9).add_(g, alpha=0.1)
    v.mul_(0.999).addcmul_(g, g, value=0.001)
    p.addcdiv_(m, v.sqrt().add_(1e-8), value=-0.01)


def test_moments_update_in_place():
    (p, m, v), (pl, ml, vl) = tensors(64, 48)
    v.abs_()
    vl.abs_()
    g = torch.randn(64, 48)
    gl = g.to(D)
    loom.sync()
    _, metrics = counted(lambda: adam_like(pl, ml, vl, gl))
    adam_like(p, m, v, g)
    for a, b in ((pl, p), (ml, m), (vl, v)):
        torch.testing.assert_close(a.cpu(), b, rtol=1e-6, atol=1e-6)
    assert metrics["kernels_run"] == 1
    assert metrics["superseded_bases"] == 2  # both moments; the parameter's base is its own
    assert metrics["buffers_allocated"] == 0


def test_gradient_accumulation_takes_the_dying_product():
    """zero_() then `+= x @ w`: the product dies with the kernel, and the gradient is
    computed into its memory rather than into its own old block, which it does not read."""
    (x, w, gr), (xl, wl, grl) = tensors(32, 32)

    def step(x, w, gr):
        gr.zero_()
        gr.add_(x @ w)
        return gr

    _, metrics = counted(lambda: step(xl, wl, grl))
    torch.testing.assert_close(grl.cpu(), step(x, w, gr), rtol=1e-5, atol=1e-5)
    assert metrics["donated_stores"] == 1
    assert metrics["superseded_bases"] == 0


def read_between(m, g):
    m.mul_(0.5)
    mid = m * 1  # reads the superseded write's value
    m.add_(g)
    return mid


def read_before(m, g):
    before = m + 0  # reads the value below both writes
    m.mul_(0.5).add_(g)
    return before


@pytest.mark.parametrize("run", [read_between, read_before])
def test_a_pending_reader_keeps_what_it_reads(run):
    (m, g, _), (ml, gl, _) = tensors(40, 30)

    def realize_m_first():  # the reader is still pending when m's writes run
        read = run(ml, gl)
        return ml.cpu(), read.cpu()

    (after, read), metrics = counted(realize_m_first)
    torch.testing.assert_close(read, run(m, g))
    torch.testing.assert_close(after, m)
    assert metrics["superseded_bases"] == 0


def test_a_view_of_the_buffer_sees_the_last_write():
    (m, g, _), (ml, gl, _) = tensors(16, 16)
    row, rowl = m[3], ml[3]
    colt, coltl = m.t(), ml.t()

    def run(m, g):
        m.mul_(2).add_(g)

    _, metrics = counted(lambda: run(ml, gl))
    run(m, g)
    torch.testing.assert_close(rowl.cpu(), row)
    torch.testing.assert_close(coltl.cpu(), colt)
    assert metrics["superseded_bases"] == 1


def test_reads_at_other_elements_keep_a_fresh_block():
    """The second write reads the superseded value (or the one below it) at other elements
    than it writes: computing over the old memory would clobber elements still to be read."""
    cases = [lambda m, g: m.mul_(2).add_(m.flip(0)),
             lambda m, g: m.add_(1).copy_(m.t() * g),
             lambda m, g: m.mul_(3).add_(torch.roll(m, 1, 1)),
             lambda m, g: m.zero_().add_(g.flip(1))]
    for i, fn in enumerate(cases):
        (m, g, _), (ml, gl, _) = tensors(24, 24, seed=i)
        counted(lambda: fn(ml, gl))
        fn(m, g)
        torch.testing.assert_close(ml.cpu(), m, msg=f"case {i}")


def test_loop_of_updates_matches_cpu():
    """An optimizer-like loop, each write superseding the last, over layouts that are not
    contiguous as well (their writes do not cover the buffer and keep their base)."""
    for make in (lambda t: t, lambda t: t.t(), lambda t: t[:, ::2]):
        (p, m, v), (pl, ml, vl) = tensors(20, 24, seed=5)
        v.abs_()
        vl.abs_()
        p, m, v = make(p), make(m), make(v)
        pl, ml, vl = make(pl), make(ml), make(vl)
        for k in range(5):
            g = torch.randn(p.shape, generator=torch.Generator().manual_seed(k))
            gl = g.to(D)
            adam_like(p, m, v, g)
            adam_like(pl, ml, vl, gl)
        for a, b in ((pl, p), (ml, m), (vl, v)):
            torch.testing.assert_close(a.cpu(), b, rtol=1e-5, atol=1e-6)


# Per step of a two-layer MLP (four parameters), foreach or not, computed over the value
# below a superseded write: both moments of each parameter (Adam, AdamW), each decayed
# parameter (AdamW), each momentum buffer (SGD), and the two bias gradients (`zero_()`
# then `+=`). Four stores take a dying product's memory instead (donated): the two weight
# gradients and the ReLU's forward and backward over the hidden layer's products.
# torch 2.x's Adam and AdamW move the first moment with one `lerp_` (a single write:
# nothing below it is superseded), so they count one fewer per parameter there.
TORCH_2 = int(torch.__version__.split(".")[0]) >= 2


@pytest.mark.parametrize("name,kwargs,superseded", [
    ("Adam", {}, 6 if TORCH_2 else 10), ("AdamW", {}, 10 if TORCH_2 else 14),
    ("SGD", {"momentum": 0.9}, 6)])
@pytest.mark.parametrize("foreach", [True, False])
def test_optimizer_steps_update_in_place(name, kwargs, superseded, foreach):
    torch.manual_seed(0)
    cpu = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    models = {"cpu": cpu, "loom": copy.deepcopy(cpu).to(D)}
    x = torch.randn(16, 32)
    inputs = {"cpu": x, "loom": x.to(D)}
    opts = {k: getattr(torch.optim, name)(m.parameters(), lr=1e-2, foreach=foreach, **kwargs)
            for k, m in models.items()}

    def step(k):
        opts[k].zero_grad(set_to_none=False)  # 2.x defaults to None: no zero_() then +=
        models[k](inputs[k]).square().mean().backward()
        opts[k].step()

    for _ in range(3):
        step("cpu")
        step("loom")
    _, metrics = counted(lambda: step("loom"))
    step("cpu")
    assert metrics["superseded_bases"] == superseded
    assert metrics["donated_stores"] == 4
    assert metrics["buffers_allocated"] == 0
    for p, q in zip(models["loom"].parameters(), models["cpu"].parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), rtol=1e-5, atol=1e-6)
