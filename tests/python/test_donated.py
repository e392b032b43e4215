"""A store over a fresh buffer computes into the memory of a temporary it alone reads
(NOTE [Donated memory] in csrc/schedule/reuse.cpp), and a kernel that reads its output's
memory writes it with ordinary stores, not streamed ones (NOTE [Streaming stores]). Values
and aliasing stay as on the CPU: nothing that can still be read is ever written."""
import os
import subprocess
import sys

import torch

import loom

D = loom.device


def donations(fn):
    """fn()'s result on the CPU, and the stores it donated memory to."""
    loom.sync()
    loom.reset_metrics()
    out = fn()
    loom.sync()
    return out, loom.metrics()["donated_stores"]


def operands():
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(96, 80, generator=g), torch.randn(80, 64, generator=g), torch.randn(64, generator=g)
    return (x, w, b), tuple(t.to(D) for t in (x, w, b))


def test_product_epilogue_takes_the_product_memory():
    (x, w, b), (xl, wl, bl) = operands()
    y, n = donations(lambda: torch.relu(xl @ wl + bl).cpu())
    torch.testing.assert_close(y, torch.relu(x @ w + b), rtol=1e-5, atol=1e-5)
    assert n == 1


def test_a_held_temporary_is_not_written():
    (x, w, b), (xl, wl, bl) = operands()
    t = xl @ wl
    (y, tc), n = donations(lambda: (torch.relu(t + bl).cpu(), t.cpu()))
    torch.testing.assert_close(tc, x @ w, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y, torch.relu(x @ w + b), rtol=1e-5, atol=1e-5)
    assert n == 0


def test_a_view_of_the_temporary_stays_readable():
    (x, w, b), (xl, wl, bl) = operands()
    t = xl @ wl
    row = t[3]  # a view keeps the storage, and so its value, alive
    del t
    (y, r), n = donations(lambda: (torch.relu((xl @ wl) * 0 + row + bl).cpu(), row.cpu()))
    torch.testing.assert_close(r, (x @ w)[3], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y, torch.relu((x @ w)[3] + b).expand(96, 64), rtol=1e-5, atol=1e-5)


def test_reads_at_other_elements_are_not_donors():
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)
    al, bl = a.to(D), b.to(D)
    # A kernel that reads the dead product at other elements than it writes keeps it.
    for fn in (lambda p, q: (p @ q).t() + 1, lambda p, q: (p @ q).flip(0) * 2):
        y, n = donations(lambda: fn(al, bl).cpu())
        torch.testing.assert_close(y, fn(a, b), rtol=1e-4, atol=1e-4)
        assert n == 0


def test_reductions_of_a_dead_product_match_cpu():
    """Reductions over the product's rows or columns, in the kernel that stores the
    result or in kernels before it, at sizes that split across threads."""
    g = torch.Generator().manual_seed(2)
    cases = [lambda m: m - m.mean(0), lambda m: m - m.mean(1, True),
             lambda m: m * m.sum(0).sigmoid(), lambda m: m - m.amax(0),
             lambda m: torch.softmax(m, 0), lambda m: torch.softmax(m, 1),
             lambda m: torch.nn.functional.layer_norm(m, m.shape[-1:]),
             lambda m: m.cumsum(0), lambda m: m.cumsum(1), lambda m: m / m.norm(dim=0),
             lambda m: torch.roll(m, 1, 1) - 1, lambda m: m - m.t()]
    donated = 0
    for size in (64, 1024):
        a, b = torch.randn(size, size, generator=g), torch.randn(size, size, generator=g) / size ** 0.5
        al, bl = a.to(D), b.to(D)
        for fn in cases:
            y, n = donations(lambda: fn(al @ bl).cpu())
            torch.testing.assert_close(y, fn(a @ b), rtol=1e-3, atol=2e-3)
            donated += n
    assert donated > 0  # column reductions run first; the stores after them take the product


def test_donor_is_a_dead_input_copy():
    x = torch.randn(1000)
    y, n = donations(lambda: (x.to(D) * 3 + 1).cpu())
    torch.testing.assert_close(y, x * 3 + 1)
    assert n == 1


def test_reinplaced_memory_is_not_donated_twice():
    # x.mul_(2) computes into x's memory; the old value dies, its memory lives on in x.
    x = torch.randn(512)
    xl = x.to(D)
    xl.mul_(2)
    y = (xl + 1)
    loom.sync()
    torch.testing.assert_close(xl.cpu(), x * 2)
    torch.testing.assert_close(y.cpu(), x * 2 + 1)


CHILD = r"""
import torch, loom, sys
x = torch.randn(4096)
xl = x.to(loom.device)
print("INPLACE", file=sys.stderr, flush=True)
xl.add_(1.5)
loom.sync()
print("FRESH", file=sys.stderr, flush=True)
y = xl * 2
loom.sync()
torch.testing.assert_close(xl.cpu(), x + 1.5)
torch.testing.assert_close(y.cpu(), (x + 1.5) * 2)
print("ok")
"""


def test_in_place_kernels_do_not_stream(tmp_path):
    """Every output streams at this threshold, but for one whose lines the kernel reads."""
    env = dict(os.environ, LOOM_STREAM_BYTES="4096", LOOM_DEBUG="4", LOOM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and out.stdout.split() == ["ok"], out.stderr[-4000:]
    inplace, fresh = out.stderr.split("INPLACE")[1].split("FRESH")
    assert "void kernel" in inplace and "loom_stream(&p0" not in inplace.split("void kernel")[1]
    assert "loom_stream(&p0" in fresh.split("void kernel")[1]
