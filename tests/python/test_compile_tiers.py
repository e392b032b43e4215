"""Compile tiers (NOTE [Compile tiers] in runtime/compiler.cpp): kernels over little work are
compiled at -O0 first and optimized once they have run enough; both compiles give the same
bits (NOTE [No contraction] in codegen/render_c.cpp), and the disk cache prefers the
optimized object."""
import os
import subprocess
import sys

import pytest
import torch

import loom

# Ops whose rounding a compiler could change: products added (contraction), vectorized
# reductions with their remainders, inline math, reduced-precision floats, integers, casts.
PROGRAM = r"""
import sys, torch, loom
torch.manual_seed(0)
d = loom.device
out = {}
for n in (1, 31, 1000, 4099):
    a = torch.randn(n, dtype=torch.float64)
    b = torch.randn(n, dtype=torch.float64)
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x, y = a.to(dt).to(d), b.to(dt).to(d)
        out[f"fma{n}{dt}"] = x * y + x
        out[f"fms{n}{dt}"] = x - y * 2.5
        out[f"dot{n}{dt}"] = (x * y).sum()
        out[f"chain{n}{dt}"] = ((x * 2 + 1).exp() - y).sigmoid()
        out[f"math{n}{dt}"] = x.tanh() + y.erf() * x.abs().log1p() - x.sin() * y.cos()
        out[f"gelu{n}{dt}"] = torch.nn.functional.gelu(x) + torch.nn.functional.silu(y)
        out[f"addcmul{n}{dt}"] = torch.addcmul(x, x, y, value=0.3).lerp(y, 0.7)
        out[f"norm{n}{dt}"] = torch.stack([x.mean(), x.var(), x.norm(), x.logsumexp(0), x.amax()])
        out[f"cumsum{n}{dt}"] = (x * y).cumsum(0)
    i = (a * 100).to(torch.int32).to(d)
    out[f"int{n}"] = (i * 7 + 3) // 5 - (i % 9) * i
    out[f"cast{n}"] = (x.float() * 300).to(torch.int16) + (x.float() * 1e3).to(torch.uint8)
m = torch.randn(33, 130).to(d)
w = torch.randn(130, 17).to(d)
out["softmax"] = m.softmax(1)
out["layernorm"] = torch.nn.functional.layer_norm(m, (130,))
out["rows"] = (m.unsqueeze(2) * w.unsqueeze(0)).sum(1)
out["cols"] = (m * 1.5 + 0.25).sum(0)
out = {k: v.cpu() for k, v in out.items()}
torch.save(out, sys.argv[1])
mt = loom.metrics()
print(mt["kernels_compiled"], mt["kernels_optimized"])
"""


def run(tmp_path, name, quick_work, extra=None):
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path / name), LOOM_QUICK_WORK=str(quick_work),
               LOOM_QUICK_RUNS="0")
    env.update(extra or {})
    path = tmp_path / (name + ".pt")
    out = subprocess.run([sys.executable, "-c", PROGRAM, str(path)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return torch.load(path), [int(v) for v in out.stdout.split()[-2:]]


def same_bits(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.contiguous().view(bits), b.contiguous().view(bits))
    return torch.equal(a, b)


def test_quick_and_optimized_kernels_give_the_same_bits(tmp_path):
    quick, (compiled_q, optimized_q) = run(tmp_path, "quick", 1 << 50)  # every kernel quick
    full, (compiled_f, optimized_f) = run(tmp_path, "full", 0)  # every kernel optimized
    assert optimized_q == 0 and optimized_f == 0
    assert compiled_q == compiled_f > 50
    assert quick.keys() == full.keys()
    differ = [k for k in quick if not same_bits(quick[k], full[k])]
    assert not differ


def test_products_round_as_on_the_cpu():
    # NOTE [No contraction]: x * y + z rounds twice, as the CPU's ops do; an add with an
    # alpha rounds once, as the CPU's fmadd does.
    x = torch.tensor([1 + 2 ** -23], dtype=torch.float32)
    z = torch.tensor([-(1 + 2 ** -22)], dtype=torch.float32)
    lx, lz = x.to(loom.device), z.to(loom.device)
    assert (lx * lx + lz).cpu().item() == (x * x + z).item() == 0.0
    assert (lz + lx * lx).cpu().item() == 0.0
    assert (lx * lx - (-lz)).cpu().item() == 0.0
    alpha = 1 + 2 ** -23
    assert torch.add(lz, lx, alpha=alpha).cpu().item() == torch.add(z, x, alpha=alpha).item()
    assert torch.add(z, x, alpha=alpha).item() == 2.0 ** -46  # the exact product's tail
    assert torch.sub(lz, lx, alpha=-alpha).cpu().item() == 2.0 ** -46
    # Half products are rounded to half first.
    h = torch.tensor([1 + 2 ** -10], dtype=torch.float16).to(loom.device)
    assert (h * h - 1).cpu().item() == (torch.tensor([1 + 2 ** -10], dtype=torch.float16) ** 2 - 1).item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_fused_ops_match_the_cpu_bit_for_bit(dtype):
    # Where the CPU's kernels fuse a product into a sum (add/sub with an alpha, addcmul,
    # lerp), Loom has a MulAdd node; elsewhere both round each op.
    g = torch.Generator().manual_seed(3)
    s, a, b = (torch.randn(4099, generator=g, dtype=dtype) for _ in range(3))
    w = torch.rand(4099, generator=g, dtype=dtype)
    fns = [lambda s, a, b, w: torch.add(s, a, alpha=0.3),
           lambda s, a, b, w: torch.sub(s, a, alpha=0.7),
           lambda s, a, b, w: s.clone().add_(a, alpha=-3.3),
           lambda s, a, b, w: a * b + s,
           lambda s, a, b, w: torch.addcmul(s, a, b, value=0.37),
           lambda s, a, b, w: torch.addcdiv(s, a, b, value=0.37),
           lambda s, a, b, w: torch.lerp(s, a, w),
           lambda s, a, b, w: torch.lerp(s, a, 0.3)]
    for fn in fns:
        want = fn(s, a, b, w)
        got = fn(*(t.to(loom.device) for t in (s, a, b, w))).cpu()
        assert torch.equal(got, want)


def test_a_value_recomputed_in_another_kernel_has_the_same_bits():
    # amax's gradient compares its input, computed again in the backward's kernel, with the
    # max: `t1 + t1 * t2` once rounded differently there and the gradient came out 0.
    g = torch.Generator().manual_seed(7)
    c1, c2 = (torch.rand(7, generator=g) * 4 - 2 for _ in range(2))
    grads = []
    for dev in ("cpu", loom.device):
        l1, l2 = c1.clone().to(dev).requires_grad_(), c2.clone().to(dev).requires_grad_()
        t1, t2 = l1 * 1, l2 * 1
        t4 = t1 * t2
        t8 = t1 + t4
        ((t8.amax() * -1.5) + (t4 * 2).sum() + t8.sum()).backward()
        grads.append((l1.grad.cpu(), l2.grad.cpu()))
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a)


TIERS = r"""
import torch, loom
x = torch.arange(4096, dtype=torch.float32).to(loom.device)
first = (x * 3 + 1).cpu()
m = loom.metrics()
assert m["kernels_compiled"] == 1 and m["kernels_optimized"] == 0, m
assert torch.equal((x * 3 + 1).cpu(), first)  # run twice: still quick
assert loom.metrics()["kernels_optimized"] == 0
assert torch.equal((x * 3 + 1).cpu(), first)  # the third run is optimized
m = loom.metrics()
assert m["kernels_compiled"] == 1 and m["kernels_optimized"] == 1, m
for _ in range(50):
    assert torch.equal((x * 3 + 1).cpu(), first)
assert loom.metrics()["kernels_optimized"] == 1
# Another size of a kernel whose source does not depend on it: work enough to want it
# optimized at once.
small, big = torch.ones(100).to(loom.device), torch.ones(1 << 20).to(loom.device)
assert torch.equal((small - 2).relu().cpu(), torch.zeros(100))
m = loom.metrics()
assert m["kernels_compiled"] == 2 and m["kernels_optimized"] == 1, m
assert torch.equal((big - 2).relu().cpu(), torch.zeros(1 << 20))
m = loom.metrics()
assert m["kernels_compiled"] == 2 and m["kernels_optimized"] == 2, m
# Work enough from the start: compiled optimized only.
for _ in range(5):
    (big * big).sqrt().cpu()
m = loom.metrics()
assert m["kernels_compiled"] == 3 and m["kernels_optimized"] == 2, m
"""


def run_default_tiers(tmp_path, program):
    """`program` in a new process with the default tiers, logging kernels and compiles."""
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_DEBUG="2")
    env.pop("LOOM_QUICK_WORK", None)
    env.pop("LOOM_QUICK_RUNS", None)
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out, env


def test_a_small_kernel_is_optimized_at_its_third_run(tmp_path):
    out, env = run_default_tiers(tmp_path, TIERS)
    compiled = [l for l in out.stderr.splitlines() if l.startswith("loom: compiled")]
    assert ["(quick)" in l for l in compiled] == [True, False, True, False, False], compiled
    # Another process finds the optimized object on disk and compiles nothing.
    out = subprocess.run([sys.executable, "-c",
                          "import torch, loom\n"
                          "x = torch.arange(4096, dtype=torch.float32).to(loom.device)\n"
                          "(x * 3 + 1).cpu()\n"
                          "m = loom.metrics()\n"
                          "print(m['kernels_compiled'], m['disk_hits'], m['kernels_optimized'])\n"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-3:] == ["0", "1", "0"]
    assert "(quick)" not in out.stderr


def test_quick_work_zero_compiles_every_kernel_optimized(tmp_path):
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_DEBUG="2", LOOM_QUICK_WORK="0")
    out = subprocess.run([sys.executable, "-c",
                          "import torch, loom\n"
                          "x = torch.arange(10.).to(loom.device)\n"
                          "for _ in range(3): (x * 3 + 1).cpu()\n"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    compiled = [l for l in out.stderr.splitlines() if l.startswith("loom: compiled")]
    assert len(compiled) == 1 and "(quick)" not in compiled[0]


@pytest.mark.parametrize("n", [70, 1 << 16])  # compiled quick, and optimized
@pytest.mark.parametrize("src", [torch.float32, torch.float64, torch.bfloat16])
def test_float_to_integer_casts_out_of_range_match_the_cpu(n, src):
    # NOTE [Float to integer]: once undefined in C, and an optimized vectorized cast of
    # -2312.5 to uint8 differed from the CPU.
    v = torch.tensor([300., -5., 1000., -300., 70000., -1e10, 1e10, 3e9, 255.7, -0.9,
                      -2312.5, 2 ** 31, -2 ** 31, 2 ** 63, -2 ** 63, float("inf"), -float("inf")])
    v = v.repeat(n // len(v) + 1)[:n].to(src)
    for dt in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        got = (v.to(loom.device) * 1).to(dt).cpu()
        assert torch.equal(got, (v * 1).to(dt)), (dt, got[:17], (v * 1).to(dt)[:17])


SHARED = r"""
import torch, loom
a, b = torch.ones(100).to(loom.device), torch.ones(200).to(loom.device)
for t in (a, b, a, b, b, a):  # two plans (shapes) of one kernel source
    assert torch.equal((t * 3 + 1).cpu(), torch.full(t.shape, 4.0))
m = loom.metrics()
print(m["kernels_compiled"], m["kernels_optimized"])
"""


def test_plans_sharing_a_quick_kernel_all_move_to_the_optimized_one(tmp_path):
    # Runs count per kernel: the plan that did not reach the third run moves too.
    out, _ = run_default_tiers(tmp_path, SHARED)
    assert out.stdout.split()[-2:] == ["1", "1"]
    names = [l.split()[2] for l in out.stderr.splitlines() if l.startswith("loom: kernel k_")]
    assert len(names) == 6
    assert names[0] == names[1] and names[2] != names[0]
    assert names[2:] == [names[2]] * 4, names
