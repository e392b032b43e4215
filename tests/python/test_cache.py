"""The compiled-kernel cache: a second process with the same LOOM_CACHE_DIR compiles nothing,
and a failing compiler raises RuntimeError naming the kernel's source file."""
import os
import subprocess
import sys

PROGRAM = r"""
import torch, loom
x = torch.arange(1000, dtype=torch.float32).reshape(10, 100).to(loom.device)
y = ((x * 3 - 1).abs() + 0.25).sum(1)
assert torch.allclose(y.cpu(), ((torch.arange(1000.).reshape(10, 100) * 3 - 1).abs() + 0.25).sum(1))
m = loom.metrics()
print(m["kernels_compiled"], m["disk_hits"], m["kernels_run"])
"""


def run(env):
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return [int(v) for v in out.stdout.split()]


def test_second_process_compiles_nothing(tmp_path):
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path))
    compiled, _, run1 = run(env)
    assert compiled >= 1
    compiled2, hits2, run2 = run(env)
    assert compiled2 == 0
    assert hits2 == compiled and run2 == run1


def test_failing_compiler_names_source(tmp_path):
    prog = (
        "import torch, loom\n"
        "x = torch.ones(3).to(loom.device)\n"
        "try:\n"
        "    (x * 7.25).cpu()\n"
        "except RuntimeError as e:\n"
        "    print('RuntimeError', '.c' in str(e))\n"
        "print(((x + 1).cpu() if False else 'alive'))\n"
    )
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_CC="false")
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "RuntimeError True" in out.stdout
    assert "alive" in out.stdout


def test_fusion_of_fresh_host_copies_keeps_operands_apart():
    # Regression: the fuser's memo once matched a dead node's address reused by a new one.
    import torch
    import loom
    g0, x = torch.randn(4, 1), torch.randn(4, 6)
    for _ in range(5):
        g, y = g0.to(loom.device), x.to(loom.device)
        torch.testing.assert_close(((g + 1) * (y + 2)).cpu(), (g0 + 1) * (x + 2))
    a = torch.arange(4.0).to(loom.device)
    assert (torch.isfinite(a) & a.ne(0)).cpu().tolist() == [False, True, True, True]
