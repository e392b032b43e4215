"""Loom against CPU eager on the same work, in one process.

Each item runs on both devices: median of timed runs after warm-up; Loom's time
includes loom.sync(). Prints a table of both times, the ratio and Loom's kernels per
iteration; --json writes the same rows.
"""
import argparse
import json
import statistics
import time

import torch
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


ITEMS = [
    ("5-op elementwise chain, 16M float32", lambda: torch.rand(1 << 24), chain),
    ("softmax over rows, 4096x4096 float32", lambda: torch.randn(4096, 4096), softmax),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    torch.manual_seed(0)
    rows = []
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'item':40s} {'eager ms':>10s} {'loom ms':>10s} {'ratio':>7s} {'kernels':>8s}")
    for name, make, fn in ITEMS:
        x = make()
        xl = x.to(loom.device)
        loom.sync()
        out = [None]

        def run_loom():
            out[0] = fn(xl)

        def sync_loom():
            loom.sync()

        eager = timed(lambda: fn(x), lambda: None, args.runs)
        loom.reset_metrics()
        t = timed(run_loom, sync_loom, args.runs)
        kernels = loom.metrics()["kernels_run"] / (args.runs + 2)
        torch.testing.assert_close(out[0].cpu(), fn(x), rtol=1e-4, atol=1e-5)
        rows.append(dict(item=name, eager_ms=eager * 1e3, loom_ms=t * 1e3,
                         ratio=eager / t, kernels=kernels))
        print(f"{name:40s} {eager*1e3:10.2f} {t*1e3:10.2f} {eager/t:6.2f}x {kernels:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
