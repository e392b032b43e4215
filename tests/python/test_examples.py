"""Every training example runs on Loom with LOOM_FALLBACK=error and ends like on CPU."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def final_loss(example, device, *extra):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), LOOM_FALLBACK="error")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", example), "--device", device,
                        *extra], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    if device == "loom":
        assert "fallbacks: none" in r.stdout
    return float(re.search(r"final loss ([0-9.eE+-]+)", r.stdout).group(1))


@pytest.mark.parametrize("example,args", [
    ("train_mnist.py", ["--steps", "3", "--batch", "32"]),
    ("train_cifar.py", ["--steps", "2", "--batch", "8", "--width", "8"]),
    ("train_gpt.py", ["--steps", "2", "--batch", "4", "--context", "16", "--dim", "32"]),
])
def test_example_matches_cpu(example, args):
    loom_loss = final_loss(example, "loom", *args)
    cpu_loss = final_loss(example, "cpu", *args)
    assert abs(loom_loss - cpu_loss) <= 1e-3 * max(1.0, abs(cpu_loss))


def test_plot_writes_the_loss_curve(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "loss.png"
    final_loss("train_mnist.py", "loom", "--steps", "3", "--batch", "8", "--plot", str(out))
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
