"""Loom against CPU eager on the same work, in one process.

Each item runs on both devices: median of timed runs after warm-up; Loom's time
includes loom.sync(). Prints a table of both times, the ratio, Loom's kernels per
iteration and, for streaming items, Loom's GB/s against a triad probe measured in the
same run; then the compile figures (cold compile per kernel, cache hit, host time per
lazy op, setitem loop). --json writes the same rows.
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import tempfile
import time

import torch
import torch.nn.functional as F

import loom


def timed(fn, sync, runs, warmup=2):
    for _ in range(warmup):
        fn()
        sync()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def chain(x):
    return ((x * 2 + 1).exp() - 3).abs() * 0.5


def softmax(x):
    return torch.softmax(x, dim=1)


def layer_norm_gelu(args):
    x, w, b = args
    return F.gelu(F.layer_norm(x, x.shape[-1:], w, b))


def column_sum(x):
    return x.sum(0)


def triad(args):
    x, y = args
    return x + 2.5 * y


def ln_inputs():
    return (torch.randn(8192, 1024), torch.randn(1024), torch.randn(1024))


N = 1 << 24
# name, input maker, function, bytes a perfect kernel moves, absolute tolerance
ITEMS = [
    ("5-op elementwise chain, 16M float32", lambda: torch.rand(N), chain, 8 * N, 1e-5),
    ("softmax over rows, 4096x4096 float32", lambda: torch.randn(4096, 4096), softmax, 8 * N,
     1e-5),
    ("layer norm + GELU, 8192x1024 float32", ln_inputs, layer_norm_gelu, 8 * 8192 * 1024, 1e-4),
    ("sum over dim 0, 4096x4096 float32", lambda: torch.randn(4096, 4096), column_sum, 4 * N,
     1e-3),
]


def to_loom(x):
    return tuple(t.to(loom.device) for t in x) if isinstance(x, tuple) else x.to(loom.device)


def run_item(fn, x, runs, atol):
    xl = to_loom(x)
    loom.sync()
    out = [None]

    def run_loom():
        out[0] = fn(xl)

    eager = timed(lambda: fn(x), lambda: None, runs)
    loom.reset_metrics()
    t = timed(run_loom, loom.sync, runs)
    m = loom.metrics()
    kernels = m["kernels_run"] / (runs + 2)
    fallbacks = sum(m["fallbacks"].values())
    torch.testing.assert_close(out[0].cpu(), fn(x), rtol=1e-4, atol=atol)
    return eager, t, kernels, fallbacks


def compile_figures(runs=15):
    """Cold compiles of new small kernels (fresh cache directory), and cache hits."""
    old = os.environ.get("LOOM_CACHE_DIR")
    x = torch.ones(1000).to(loom.device)
    loom.sync()
    cold, hit = [], []
    with tempfile.TemporaryDirectory() as d:
        os.environ["LOOM_CACHE_DIR"] = d
        salt = random.random()
        for i in range(runs):
            c = salt + i  # a constant no other kernel has: new source, compiled cold
            loom.reset_metrics()
            t0 = time.perf_counter()
            (x * c + 1).cpu()
            cold.append((time.perf_counter() - t0) * 1e3)
            assert loom.metrics()["kernels_compiled"] == 1
            t0 = time.perf_counter()
            (x * c + 1).cpu()  # the same kernel again: an in-memory cache hit
            hit.append((time.perf_counter() - t0) * 1e3)
    if old is None:
        del os.environ["LOOM_CACHE_DIR"]
    else:
        os.environ["LOOM_CACHE_DIR"] = old
    return statistics.median(cold), statistics.median(hit)


def host_time_per_op(n=20000):
    """Recording one lazy op on a tiny tensor, against eager running it."""
    xl = torch.ones(4).to(loom.device)
    x = torch.ones(4)
    loom.sync()
    res = []
    for t in (x, xl):
        best = 1e9
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(n):
                t + 1
            best = min(best, (time.perf_counter() - t0) / n)
        res.append(best * 1e6)
    return res


def setitem_loop(n=1000):
    res = []
    for dev in ("cpu", loom.device):
        x = torch.zeros(n, device=dev)
        loom.sync()
        loom.reset_metrics()
        t0 = time.perf_counter()
        for i in range(n):
            x[i] = i
        host = (time.perf_counter() - t0) / n * 1e6
        loom.sync()
        total = (time.perf_counter() - t0) / n * 1e6
        res.append((host, total, loom.metrics()["kernels_run"]))
    return res


def triad_probe(runs):
    """GB/s of a Loom kernel computing x + 2.5 * y on 16M float32 (2 reads, 1 write)."""
    x, y = torch.rand(N).to(loom.device), torch.rand(N).to(loom.device)
    loom.sync()
    out = [None]
    t = timed(lambda: out.__setitem__(0, triad((x, y))), loom.sync, runs)
    return 12 * N / t / 1e9


def cache_malloc():
    """Eager as it is meant to be measured: with a caching allocator. glibc returns every
    64 MB temporary to the system and faults fresh pages in for the next (4x the time of
    the eager chain here); with mmap off and no trimming, freed blocks are reused."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_max = -1, -4
    return libc.mallopt(m_mmap_max, 0) == 1 and libc.mallopt(m_trim_threshold, 2**31 - 1) == 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--eager-threads", type=int, default=os.cpu_count(),
                    help="torch.set_num_threads for eager (default: every core, as Loom uses)")
    ap.add_argument("--stock-malloc", action="store_true",
                    help="leave glibc malloc as it is (eager then pays page faults)")
    args = ap.parse_args()
    cached = not args.stock_malloc and cache_malloc()
    torch.manual_seed(0)
    torch.set_num_threads(args.eager_threads)
    rows = []
    print(f"torch {torch.__version__}, eager on {torch.get_num_threads()} threads "
          f"({'caching' if cached else 'stock'} malloc), Loom on {os.cpu_count()}")
    triad_gbs = triad_probe(args.runs)
    print(f"triad probe (Loom, 16M float32, 2 reads + 1 write): {triad_gbs:.1f} GB/s")
    print(f"{'item':40s} {'eager ms':>9s} {'loom ms':>9s} {'ratio':>7s} {'kernels':>8s} "
          f"{'GB/s':>6s} {'of triad':>8s}")
    for name, make, fn, nbytes, atol in ITEMS:
        eager, t, kernels, fallbacks = run_item(fn, make(), args.runs, atol)
        gbs = nbytes / t / 1e9 if nbytes else None
        row = dict(item=name, eager_ms=eager * 1e3, loom_ms=t * 1e3, ratio=eager / t,
                   kernels=kernels, fallbacks=fallbacks, gbs=gbs)
        rows.append(row)
        note = f"  ({fallbacks} CPU fallbacks)" if fallbacks else ""
        bw = f"{gbs:6.1f} {gbs / triad_gbs:7.0%}" if gbs else ""
        print(f"{name:40s} {eager*1e3:9.2f} {t*1e3:9.2f} {eager/t:6.2f}x {kernels:8.1f} "
              f"{bw}{note}")
    cold, hit = compile_figures()
    print(f"new tiny kernel, compiled cold + run (median of 15): {cold:.1f} ms; "
          f"the same again (cache hit + run): {hit:.3f} ms")
    eager_us, loom_us = host_time_per_op()
    print(f"one lazy op on a tiny tensor, host time: Loom {loom_us:.2f} us, "
          f"eager {eager_us:.2f} us")
    (e_host, e_total, _), (l_host, l_total, l_kernels) = setitem_loop()
    print(f"setitem loop, 1000 scalar writes: Loom {l_host:.2f} us/write host, "
          f"{l_total:.2f} us/write with sync, {l_kernels} kernel(s); eager {e_total:.2f} us/write")
    rows.append(dict(item="compile", cold_compile_ms=cold, cache_hit_ms=hit,
                     host_us_per_op=loom_us, eager_us_per_op=eager_us,
                     setitem_us_per_write=l_host, setitem_kernels=l_kernels,
                     triad_gbs=triad_gbs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
