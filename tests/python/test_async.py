"""Kernels and products run on the executor thread while the host records (NOTE
[Asynchronous execution] in csrc/runtime/executor.h): the host's reads of realized memory
wait for the task that wrote it, and LOOM_ASYNC=0 (every task where it is issued) computes
the same bits."""
import os
import subprocess
import sys

import pytest
import torch

import loom

D = loom.device
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TRAIN = """
import hashlib, torch, loom
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 64), torch.nn.GELU(),
                            torch.nn.Linear(64, 10)).to(loom.device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(16, 3, 16, 16).to(loom.device)
y = torch.randint(0, 10, (16,)).to(loom.device)
losses = []
for _ in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    losses.append(loss.item())
h = hashlib.sha256()
for p in model.parameters():
    h.update(p.detach().cpu().numpy().tobytes())
print("RESULT", h.hexdigest(), losses, loom.metrics()["kernels_run"])
"""


def run_train(asynchronous):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               LOOM_ASYNC="1" if asynchronous else "0")
    r = subprocess.run([sys.executable, "-c", TRAIN], env=env, capture_output=True, text=True,
                       timeout=300)
    line = [s for s in r.stdout.splitlines() if s.startswith("RESULT")]
    assert line, r.stderr
    return line[0]


def test_training_computes_the_same_bits_with_and_without_the_executor():
    assert run_train(True) == run_train(False)


def test_a_read_waits_for_the_tasks_writing_what_it_reads():
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    loom.reset_metrics()
    c = a.to(D) @ b.to(D)  # issued as it is recorded: two billion flops on the executor
    # Past the graph bound (NOTE [Graph bound]) the pending adds are issued too, behind the
    # product, as the host goes on recording.
    for _ in range(300):
        c = c + 1
    assert loom.metrics()["extern_calls"] == 1
    want = a @ b + 300
    torch.testing.assert_close(c[:4, :8].cpu(), want[:4, :8])
    torch.testing.assert_close(c.cpu(), want)


def test_an_index_check_waits_for_the_kernel_writing_the_index():
    torch.manual_seed(0)
    a = torch.randn(1024, 1024)
    slow = a.to(D) @ a.to(D)
    for _ in range(300):  # the product is issued at the graph bound, ahead of the index
        slow = slow + 0.5
    start = 200 - 259 * 4000
    idx = torch.tensor([start, start + 1], device=D)
    # Issued at the graph bound behind the product; the last two adds stay pending, and the
    # check computes the index from them and the memory below (NOTE [Known values]).
    for _ in range(259):
        idx = idx + 4000
    src = torch.arange(400., device=D)
    # Stale memory would hold no such index.
    assert src[idx].tolist() == [200.0, 201.0]
    torch.testing.assert_close(slow.cpu(), a @ a + 150, rtol=1e-4, atol=1e-3)


def test_a_product_is_issued_as_it_is_recorded():
    """NOTE [Library calls issued when recorded]: the product and the kernel storing its
    operand run while the host goes on; the values are the CPU's."""
    torch.manual_seed(0)
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    al, bl = a.to(D), b.to(D)
    loom.sync()
    loom.reset_metrics()
    c = (al * 2).relu() @ bl
    m = loom.metrics()
    assert (m["extern_calls"], m["kernels_run"]) == (1, 1)  # the operand, then the product
    d = c + 1  # recorded behind them; nothing waits
    assert loom.metrics()["host_waits"] == 0
    torch.testing.assert_close(d.cpu(), (a * 2).relu() @ b + 1)


def test_an_operands_index_fault_is_raised_at_the_product():
    emb = torch.randn(10, 8, device=D)
    scores = torch.zeros(3, 5, device=D)
    scores[1, 4] = 1.0
    idx = scores.argmax(dim=1) + 8  # 8, 12, 8: not known on the host, checked by the kernel
    rows = emb[idx]
    with pytest.raises(IndexError):
        rows @ torch.randn(8, 4, device=D)
    assert torch.isfinite(emb).all().item()  # the device goes on


def test_the_host_waits_rather_than_run_ahead_without_bound():
    """NOTE [Bounded lookahead]: a loop that never reads a result records at most a few
    hundred tasks ahead of the executor, and once that many blocks are cached it takes no
    more. Unbounded, every block freed while tasks were pending was quarantined, and each
    iteration took a fresh one (0.6 MB each, 300 MB in the second loop here)."""
    g = torch.Generator().manual_seed(0)
    w = (torch.randn(384, 384, generator=g) / 20).to(D)
    x = torch.randn(384, 384, generator=g).to(D)
    loom.sync()

    def run(n):
        nonlocal x
        for _ in range(n):
            x = torch.tanh(x @ w)  # a product and a kernel; the last x's block is freed

    run(600)
    loom.reset_metrics()
    run(600)
    allocated = loom.metrics()["bytes_allocated"]
    loom.sync()
    assert allocated < 8 << 20
    assert bool(x.abs().max().cpu() <= 1)
