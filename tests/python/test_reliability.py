"""Reliability: faults, bad compilers, long lazy chains and threads never crash Loom or
lose data (issue 6; the index-fault cases live in test_index_ops.py)."""
import os
import subprocess
import sys
import threading

import torch

import loom

D = loom.device
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code, **env):
    e = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **env)
    return subprocess.run([sys.executable, "-c", "import torch, loom\n" + code], env=e,
                          capture_output=True, text=True, timeout=300)


def test_missing_compiler_raises_naming_the_source(tmp_path):
    r = run_python("x = torch.arange(5., device=loom.device) * 3.25\n"
                   "try:\n    x.cpu()\nexcept RuntimeError as e:\n    print('RAISED', e)\n"
                   "print('ALIVE', (torch.ones(2) + 1).tolist())",
                   LOOM_CC="/nonexistent/cc", LOOM_CACHE_DIR=str(tmp_path))
    assert "RAISED loom: compiling kernel" in r.stdout and ".c failed" in r.stdout, r.stderr
    assert "ALIVE [2.0, 2.0]" in r.stdout


def test_long_elementwise_chain_is_bounded():
    a = torch.zeros(16, device=D)
    for _ in range(30000):
        a = a + 1
    assert a[:2].tolist() == [30000.0, 30000.0]


def test_dropping_a_long_pending_chain():
    c = torch.zeros(8, device=D)
    for i in range(50000):
        c[i % 8] = float(i)
    del c  # never realized: released without recursion
    b = torch.zeros(8, device=D)
    for i in range(20000):
        b[i % 8] += 1
    assert b.tolist() == [2500.0] * 8


def test_threads_get_correct_results():
    errors = []

    def work(seed):
        try:
            g = torch.Generator().manual_seed(seed)
            a = torch.randn(32, 32, generator=g)
            x, ref = a.to(D), a.clone()
            for i in range(30):
                x = (x * 0.5 + 1).tanh()
                ref = (ref * 0.5 + 1).tanh()
                x[i % 32] = float(i)
                ref[i % 32] = float(i)
                if i % 10 == 0:
                    x, ref = x @ x.t() / 32, ref @ ref.t() / 32
            if not torch.allclose(x.cpu(), ref, atol=1e-4):
                errors.append(f"thread {seed}: values differ")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_fallback_refuses_mutated_tensor_lists(monkeypatch):
    monkeypatch.setenv("LOOM_FALLBACK", "allow")
    xs = [torch.ones(3, device=D), torch.ones(2, device=D)]
    try:
        torch._foreach_lgamma_(xs)  # no Loom kernel: must not silently drop the writes
    except NotImplementedError as e:
        assert "cannot write a list of tensors back" in str(e)
    else:
        assert [x.tolist() for x in xs] == [[0.0] * 3, [0.0] * 2]
