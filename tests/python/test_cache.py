"""The compiled-kernel cache: a second process with the same LOOM_CACHE_DIR compiles nothing,
and a failing compiler raises RuntimeError naming the kernel's source file."""
import os
import subprocess
import sys

import pytest

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


@pytest.mark.parametrize("cc", ["", "cc"])
def test_second_process_compiles_nothing(tmp_path, cc):
    # "": the in-process compiler where loom was built with it; "cc": the system compiler.
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_CC=cc)
    compiled, _, run1 = run(env)
    assert compiled >= 1
    compiled2, hits2, run2 = run(env)
    assert compiled2 == 0
    assert hits2 == compiled and run2 == run1
    assert len(objects(tmp_path)) == compiled
    if cc:
        assert {p.suffix for p in objects(tmp_path)} == {".so"}


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


# --- damaged cache entries (NOTE [Sealed cache entries] in csrc/runtime/disk_cache.h) ---

def _truncate_half(so, c):
    data = so.read_bytes()
    so.write_bytes(data[: len(data) // 2])


def _empty(so, c):
    so.write_bytes(b"")


def _flip_code_byte(so, c):
    data = bytearray(so.read_bytes())
    data[len(data) // 3] ^= 0x5A
    so.write_bytes(bytes(data))


def _drop_trailer(so, c):
    so.write_bytes(so.read_bytes()[:-32])  # an unsealed but otherwise valid object


def _flip_checksum(so, c):
    data = bytearray(so.read_bytes())
    data[-10] ^= 1
    so.write_bytes(bytes(data))


def _garbage(so, c):
    so.write_bytes(b"\x7fELF" + bytes(range(256)) * 8)


def _corrupt_source(so, c):
    c.write_text(c.read_text() + "\n/* edited */\n")


def _missing_source(so, c):
    c.unlink()


def _cut_tail(so, c):
    so.write_bytes(so.read_bytes()[:-7])  # the trailer torn


# Rounds of damages, one per cached kernel (DAMAGE_PROGRAM compiles three).
ROUNDS = [(_truncate_half, _empty, _flip_code_byte), (_drop_trailer, _flip_checksum, _garbage),
          (_corrupt_source, _missing_source, _cut_tail)]


def objects(d):
    """The compiled entries of a cache directory: objects of the in-process compiler, or
    shared objects of the system compiler (LOOM_CC)."""
    return sorted(p for p in d.glob("k_*") if p.suffix in (".o", ".so"))


def _swap_objects(sos):
    # Each file holds another kernel's valid, sealed object: the key in the trailer differs.
    datas = [p.read_bytes() for p in sos]
    for p, d in zip(sos, datas[1:] + datas[:1]):
        p.write_bytes(d)


def test_damaged_entries_are_recompiled(tmp_path):
    import shutil
    base = tmp_path / "base"
    out = subprocess.run([sys.executable, "-c", DAMAGE_PROGRAM + DISK_REPORT],
                         env=dict(os.environ, LOOM_CACHE_DIR=str(base)), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    compiled, _, runs, _ = [int(v) for v in out.stdout.split()[-4:]]
    sos = objects(base)
    assert len(sos) == compiled == 3
    for i, damages in enumerate(ROUNDS + [None]):
        d = tmp_path / f"round{i}"
        shutil.copytree(base, d)
        dsos = objects(d)
        if damages is None:
            _swap_objects(dsos)
        else:
            for so, damage in zip(dsos, damages):
                damage(so, so.with_suffix(".c"))
        env = dict(os.environ, LOOM_CACHE_DIR=str(d))
        out = subprocess.run([sys.executable, "-c", DAMAGE_PROGRAM + DISK_REPORT], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (damages, out.stderr)
        c2, hits, runs2, rejects = [int(v) for v in out.stdout.split()[-4:]]
        assert (c2, hits, rejects, runs2) == (compiled, 0, compiled, runs), damages
        # The rewritten entries are whole again: the next process loads all of them.
        out = subprocess.run([sys.executable, "-c", DAMAGE_PROGRAM + DISK_REPORT], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, (damages, out.stderr)
        assert [int(v) for v in out.stdout.split()[-4:]] == [0, compiled, runs, 0], damages


DISK_REPORT = 'print(m["kernels_compiled"], m["disk_hits"], m["kernels_run"], m["disk_rejects"])\n'
# PROGRAM and two more kernels, so that entries can be swapped.
DAMAGE_PROGRAM = PROGRAM.replace("m = loom.metrics()", """
z = torch.arange(12, dtype=torch.int64).to(loom.device)
assert (z * 5 % 7).tolist() == [(i * 5) % 7 for i in range(12)]
assert (z.view(3, 4).t() - 1).sum(1).tolist() == [9, 12, 15, 18]
m = loom.metrics()""")


def test_processes_filling_one_cache_at_once(tmp_path):
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (o, e) in zip(procs, outs):
        assert p.returncode == 0, e
    assert not list(tmp_path.glob("*.tmp"))
    out = subprocess.run([sys.executable, "-c", PROGRAM + DISK_REPORT], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    compiled, hits, _, rejects = [int(v) for v in out.stdout.split()[-4:]]
    assert (compiled, rejects) == (0, 0) and hits == len(objects(tmp_path))


def test_unloaded_kernels_load_again_from_disk(tmp_path):
    # NOTE [Loaded kernels]: at most LOOM_MAX_LOADED_KERNELS stay loaded; the rest reload.
    prog = (
        "import torch, loom\n"
        "x = torch.arange(6.).to(loom.device)\n"
        "ref = torch.arange(6.)\n"
        "for rnd in range(2):\n"
        "    for op in ('neg', 'abs', 'floor', 'ceil'):\n"  # constants would be arguments
        "        assert getattr(x, op)().tolist() == getattr(ref, op)().tolist()\n"
        "m = loom.metrics()\n"
        "print(m['kernels_compiled'], m['kernels_unloaded'], m['disk_hits'], m['cache_hits'])\n")
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_MAX_LOADED_KERNELS="2")
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    # Four kernels, two loaded at a time: every use in the second round reloads from disk.
    assert [int(v) for v in out.stdout.split()[-4:]] == [4, 6, 4, 0]


def test_perf_map_names_linked_kernels(tmp_path):
    # LOOM_PERF_MAP=1: perf finds the in-process compiler's kernels by name.
    prog = PROGRAM + "import os\nprint(os.getpid())\n"
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_PERF_MAP="1")
    env.pop("LOOM_CC", None)
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    pid = out.stdout.split()[-1]
    path = f"/tmp/perf-{pid}.map"
    if not any(p.suffix == ".o" for p in objects(tmp_path)):
        pytest.skip("built without the in-process compiler")
    try:
        with open(path) as f:
            rows = [line.split() for line in f]
    finally:
        os.remove(path)
    assert {r[2] for r in rows} == {p.stem for p in objects(tmp_path)}
    assert all(int(r[0], 16) > 0 and int(r[1], 16) > 0 for r in rows)


def fake_entry(d, key, age_s, nbytes, suffixes=(".c", ".o")):
    """A cache entry's files of `nbytes` each, last used `age_s` seconds ago."""
    import time
    for s in suffixes:
        p = d / f"k_{key:016x}{s}"
        p.write_bytes(b"x" * nbytes)
        t = time.time() - age_s
        os.utime(p, (t, t))


def test_sweep_evicts_least_recently_used_entries(tmp_path):
    """NOTE [Cache size]: beyond the limit, whole entries go, least recently used first,
    down to nine tenths of it; the prelude, temporaries and other files stay."""
    import loom
    for k in range(10):
        fake_entry(tmp_path, k, age_s=1000 - k * 10, nbytes=50_000)  # entry 0 the oldest
    (tmp_path / "prelude_00ff.pch").write_bytes(b"p" * 300_000)
    (tmp_path / "k_0000000000000003.o.123.tmp").write_bytes(b"t" * 1000)
    (tmp_path / "notes.txt").write_text("kept")
    removed, before, after = loom._loom._sweep_cache(str(tmp_path), 700_000)
    assert (removed, before, after) == (4, 1_000_000, 600_000)  # 9/10 of 700 KB: 630 KB
    left = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in left if n.endswith(".c")] == [f"k_{k:016x}.c" for k in range(4, 10)]
    assert {"prelude_00ff.pch", "k_0000000000000003.o.123.tmp", "notes.txt"} <= set(left)
    assert loom._loom._sweep_cache(str(tmp_path), 700_000) == (0, 600_000, 600_000)
    assert loom._loom._sweep_cache(str(tmp_path), 0)[0] == 0  # 0: no limit


SWEEP_PROGRAM = PROGRAM + r"""
import os, time
d = os.environ["LOOM_CACHE_DIR"]
for _ in range(200):  # the sweep runs beside the program, in a thread of its own
    if not os.path.exists(os.path.join(d, "k_0000000000000001.c")):
        break
    time.sleep(0.05)
"""


def test_a_writing_process_sweeps_an_overfull_cache(tmp_path):
    """A process that compiles sweeps the cache when none did for ten minutes (the stamp),
    keeping what it just wrote and what was used recently; a process that only loads,
    with a fresh stamp, sweeps nothing, and marks what it loads as used."""
    import time
    for k in range(1, 41):
        fake_entry(tmp_path, k, age_s=3600, nbytes=40_000)  # 3.2 MB, an hour old
    env = dict(os.environ, LOOM_CACHE_DIR=str(tmp_path), LOOM_CACHE_MAX_MB="1")
    out = subprocess.run([sys.executable, "-c", SWEEP_PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    compiled = int(out.stdout.split()[0])
    assert compiled >= 1 and (tmp_path / "sweep.stamp").exists()
    assert not (tmp_path / "k_0000000000000001.c").exists()
    fakes = {f"k_{k:016x}.o" for k in range(1, 41)}
    mine = [p for p in objects(tmp_path) if p.name not in fakes]
    assert len(mine) == compiled  # the new entries stayed
    total = sum(p.stat().st_size for p in tmp_path.iterdir() if p.name.startswith("k_"))
    assert total <= 1 << 20
    old = time.time() - 3600
    for p in mine:
        os.utime(p, (old, old))
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[0]) == 0  # all loaded
    assert all(p.stat().st_mtime > old + 60 for p in mine)
