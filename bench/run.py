"""Loom against CPU eager on the same work, in one process.

Each item runs on both devices in alternating blocks of runs (the machine's speed
drifts), each block after an untimed run (and the items before the training steps first
six times each, untimed, for a steady state): median of each device's timed runs; Loom's
time includes loom.sync(). Prints a table of both times, the ratio, Loom's kernels per
iteration and, for streaming items, Loom's GB/s against a triad probe measured in the
same run (for the matrix products, GFLOP/s against oneDNN's sgemm called alone on the
same shape, beside an FMA probe of Loom's own); then the compile figures (cold compile
per kernel, cache hit, host time per lazy op, setitem loop). Training items time one
whole optimizer step (forward, loss, backward, update) of the example networks on a fixed
batch. --only runs just the items whose names contain one of the given words. --json
writes the same rows.
"""
import argparse
import copy
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import loom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import train_cifar  # noqa: E402  (the example networks, as the examples train them)
import train_gpt  # noqa: E402


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


def timed_pair(eager, loom_fn, runs, block=2):
    """Median times of eager's and Loom's runs, taken in alternating blocks: this machine's
    speed moves by tens of percent within a minute, and two medians timed one after the
    other measured that as much as the devices. A device's threads spin for a while after
    its work (OpenMP's, Loom's pool, NOTE [Spinning pool]) and would take the cores from
    the other device's runs: each block starts after a pause that lets them sleep, then an
    untimed run that wakes its own. Each device's data also leaves the cache to the
    other's between blocks: Loom's sum over dim 0 (64 MB) read 2.1 ms in runs of its own,
    3.8 ms in blocks, closer to what a program that does other work between sees.
    Returns both medians and the number of Loom runs (for kernels per run)."""
    times = ([], [])
    fns = (eager, loom_fn)
    syncs = (lambda: None, loom.sync)
    calls = 0
    while len(times[1]) < runs:
        for d in (0, 1):
            time.sleep(0.05)
            for i in range(1 + block):
                t0 = time.perf_counter()
                fns[d]()
                syncs[d]()
                if i > 0:
                    times[d].append(time.perf_counter() - t0)
            calls += (1 + block) if d == 1 else 0
    return statistics.median(times[0]), statistics.median(times[1]), calls


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


def matmul(args):
    x, w = args[:2]
    return x @ w


def matmul_bias_relu(args):
    x, w, b = args
    return torch.relu(x @ w + b)


MM = 2048


def mm_inputs():
    return (torch.randn(MM, MM), torch.randn(MM, MM) / MM ** 0.5, torch.randn(MM))


N = 1 << 24
# name, input maker, function, bytes a perfect kernel moves, flops, absolute tolerance
ITEMS = [
    ("5-op elementwise chain, 16M float32", lambda: torch.rand(N), chain, 8 * N, 0, 1e-5),
    ("softmax over rows, 4096x4096 float32", lambda: torch.randn(4096, 4096), softmax, 8 * N, 0,
     1e-5),
    ("layer norm + GELU, 8192x1024 float32", ln_inputs, layer_norm_gelu, 8 * 8192 * 1024, 0,
     1e-4),
    ("sum over dim 0, 4096x4096 float32", lambda: torch.randn(4096, 4096), column_sum, 4 * N, 0,
     1e-3),
    ("matmul 2048x2048 float32", mm_inputs, matmul, 0, 2 * MM ** 3, 1e-3),
    ("matmul 2048x2048 + bias + ReLU", mm_inputs, matmul_bias_relu, 0, 2 * MM ** 3, 1e-3),
]


# --- training steps: name, builder -> (model, optimizer maker, batch, step) ---

def cifar_setup():
    x, y = train_cifar.synthetic(64, 0)
    model = train_cifar.network(32)

    def opt(params):
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                               foreach=True)

    def loss(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1], label_smoothing=0.2)

    return model, opt, (x, y), loss, None


def mlp_setup():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 784, generator=g), torch.randint(0, 10, (256,), generator=g)
    model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 10))

    def opt(params):
        return torch.optim.Adam(params, lr=1e-3, foreach=True)

    def loss(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    return model, opt, (x, y), loss, None


def gpt_setup():
    text = train_gpt.synthetic_text(20000, 0)
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    g = torch.Generator().manual_seed(0)
    start = torch.randint(0, len(data) - 65, (16,), generator=g).tolist()
    x = torch.stack([data[s:s + 64] for s in start])
    y = torch.stack([data[s + 1:s + 65] for s in start])
    model = train_gpt.GPT(len(chars), 64, 128, 4, 2)

    def opt(params):
        return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.1, foreach=True)

    def loss(model, batch):
        logits = model(batch[0])
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), batch[1].view(-1))

    return model, opt, (x, y), loss, lambda m: torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)


TRAIN_ITEMS = [
    ("CNN training step (CIFAR net, batch 64)", cifar_setup),
    ("MLP training step (784-1024-1024-10, b256)", mlp_setup),
    ("GPT training step (train_gpt defaults)", gpt_setup),
]


def run_train_item(setup, runs):
    """One optimizer step per iteration on each device, from equal initial weights and the
    same batch; the losses of the last step must agree."""
    torch.manual_seed(0)
    model, make_opt, batch, loss_fn, clip = setup()
    models = {"cpu": model, "loom": copy.deepcopy(model).to(loom.device)}
    batches = {"cpu": batch, "loom": to_loom(batch)}
    last = {}

    def stepper(dev):
        m, b = models[dev], batches[dev]
        opt = make_opt(m.parameters())

        def step():
            opt.zero_grad()
            loss = loss_fn(m, b)
            loss.backward()
            if clip:
                clip(m)
            opt.step()
            last[dev] = loss

        return step

    steps = {dev: stepper(dev) for dev in ("cpu", "loom")}
    loom.sync()
    loom.reset_metrics()
    eager, t, calls = timed_pair(steps["cpu"], steps["loom"], runs)
    m = loom.metrics()
    kernels = m["kernels_run"] / calls
    fallbacks = sum(m["fallbacks"].values())
    torch.testing.assert_close(last["loom"].cpu(), last["cpu"], rtol=1e-3, atol=1e-4)
    return eager, t, kernels, fallbacks


def to_loom(x):
    return tuple(t.to(loom.device) for t in x) if isinstance(x, tuple) else x.to(loom.device)


WARMUP = 6


def run_item(fn, x, runs, atol):
    xl = to_loom(x)
    loom.sync()
    out = [None]

    def run_loom():
        out[0] = fn(xl)

    # Steady state, beyond each block's untimed run: oneDNN allocates its packing buffers
    # in every product, and glibc served the first six or so of a 2048^2 product's from
    # fresh pages (957 page faults a thread a call, 5-10% of its time), which made the
    # first product item in a process slower than the same item run again.
    for _ in range(WARMUP):
        fn(x)
        run_loom()
        loom.sync()
    loom.reset_metrics()
    eager, t, calls = timed_pair(lambda: fn(x), run_loom, runs)
    m = loom.metrics()
    kernels = m["kernels_run"] / calls
    fallbacks = sum(m["fallbacks"].values())
    torch.testing.assert_close(out[0].cpu(), fn(x), rtol=1e-4, atol=atol)
    return eager, t, kernels, fallbacks


def compile_figures(runs=15):
    """Cold compiles of new small kernels (fresh cache directory), in-memory cache hits,
    and loads of the same kernels from the disk cache by a new process."""
    old = os.environ.get("LOOM_CACHE_DIR")
    cold, compile_ms, hit = [], [], []
    # Small, so that the hit's time is the lookup, launch and copy back, not the kernel's
    # work (over 1M elements the figure was mostly running the kernel).
    x = torch.ones(1 << 12).to(loom.device)
    loom.sync()
    with tempfile.TemporaryDirectory() as d:
        os.environ["LOOM_CACHE_DIR"] = d
        for i in range(runs):
            # Strides are constants of a kernel (sizes and scalars are its arguments): a
            # stride no other kernel has is new source, compiled cold.
            v = x[::i + 2]
            loom.reset_metrics()
            t0 = time.perf_counter()
            (v * 3 + 1).cpu()
            cold.append((time.perf_counter() - t0) * 1e3)
            m = loom.metrics()
            assert m["kernels_compiled"] == 1
            compile_ms.append(m["compile_us"] / 1e3)
            t0 = time.perf_counter()
            (v * 3 + 1).cpu()  # the same kernel again: an in-memory cache hit
            hit.append((time.perf_counter() - t0) * 1e3)
        # A new process finds the same kernels in the disk cache.
        prog = ("import torch, loom\n"
                "x = torch.ones(1 << 12).to(loom.device)\n"
                f"for i in range({runs}):\n"
                "    (x[::i + 2] * 3 + 1).cpu()\n"
                "m = loom.metrics()\n"
                "print(m['disk_hits'], m['load_us'], m['kernels_compiled'])\n")
        out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                             env=dict(os.environ, LOOM_CACHE_DIR=d), check=True)
        disk_hits, load_us, compiled = (int(v) for v in out.stdout.split()[-3:])
        assert disk_hits == runs and compiled == 0, out.stdout
        # The same new kernels compiled optimized from the start (NOTE [Compile tiers]: a
        # small kernel is compiled at -O0 first, and optimized once it has run enough).
        prog = ("import torch, loom, statistics\n"
                "x = torch.ones(1 << 12).to(loom.device)\n"
                "loom.sync()\n"
                "ms = []\n"
                f"for i in range({runs}):\n"
                "    loom.reset_metrics()\n"
                "    (x[::i + 2] * 3 - 1).cpu()\n"
                "    ms.append(loom.metrics()['compile_us'] / 1e3)\n"
                "print(statistics.median(ms))\n")
        out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                             env=dict(os.environ, LOOM_CACHE_DIR=d, LOOM_QUICK_WORK="0"),
                             check=True)
        optimized_ms = float(out.stdout.split()[-1])
    if old is None:
        del os.environ["LOOM_CACHE_DIR"]
    else:
        os.environ["LOOM_CACHE_DIR"] = old
    return (statistics.median(cold), statistics.median(compile_ms), statistics.median(hit),
            load_us / 1e3 / disk_hits, optimized_ms)


FIRST_STEPS = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import torch, loom
import run as bench
torch.manual_seed(0)
model, make_opt, batch, loss_fn, _ = bench.cifar_setup()
model, batch = model.to(loom.device), bench.to_loom(batch)
opt = make_opt(model.parameters())
times = []
for _ in range(3):
    t0 = time.perf_counter()
    opt.zero_grad()
    loss_fn(model, batch).backward()
    opt.step()
    loom.sync()
    times.append(time.perf_counter() - t0)
m = loom.metrics()
print(times[0], times[1], times[2], m["kernels_compiled"], m["disk_hits"])
"""


def first_steps():
    """The CNN's first training steps in a new process: with an empty kernel cache (every
    kernel compiled), then again in another process with the cache that one filled."""
    here = os.path.dirname(os.path.abspath(__file__))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", FIRST_STEPS, here], capture_output=True,
                                 text=True, env=dict(os.environ, LOOM_CACHE_DIR=d), check=True)
            t1, t2, t3, compiled, loaded = out.stdout.split()[-5:]
            rows.append((float(t1), float(t2), float(t3), int(compiled), int(loaded)))
    return rows


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


def setitem_loop(n=1000, runs=7):
    """Per write, medians of `runs` loops after one untimed: host time, time with the sync,
    and the kernels one loop ran."""
    res = []
    for dev in ("cpu", loom.device):
        hosts, totals = [], []
        for r in range(runs + 1):
            x = torch.zeros(n, device=dev)
            loom.sync()
            loom.reset_metrics()
            t0 = time.perf_counter()
            for i in range(n):
                x[i] = i
            host = (time.perf_counter() - t0) / n * 1e6
            loom.sync()
            total = (time.perf_counter() - t0) / n * 1e6
            if r > 0:
                hosts.append(host)
                totals.append(total)
        res.append((statistics.median(hosts), statistics.median(totals),
                    loom.metrics()["kernels_run"]))
    return res


def fma_probe(runs, n=N, chains=8, depth=14):
    """GFLOP/s of a Loom kernel computing, per element of n float32, `chains` independent
    chains of `depth` multiply-adds (adds with an alpha, which are FMAs on the CPU and in
    Loom's graph; `y * a + b` rounds twice, NOTE [No contraction]), summed: the chains keep the FMA
    units busy where one would wait on each result. (231 ops: fusion takes up to 256,
    kMaxFusedNodes. Smaller n measured the realization's fixed cost: 1M elements read 87
    GFLOP/s where 16M read 202.) Timed from the recorded graph to the realized result."""
    x = torch.rand(n).to(loom.device)
    # The addends, broadcast: constants of the kernel, as a Python number would be.
    b = [torch.full((1,), 1e-3 * (d + 1), device=loom.device).expand(n) for d in range(depth)]
    loom.sync()

    def record():  # only the sum outlives it: the chains' values are not stored
        total = None
        for c in range(chains):
            y = x
            for d in range(depth):
                y = torch.add(b[d], y, alpha=0.999 - 1e-4 * c)
            total = y if total is None else total + y
        return total
    times = []
    for i in range(runs + 2):
        total = record()
        t0 = time.perf_counter()
        loom.sync()
        if i >= 2:
            times.append(time.perf_counter() - t0)
    return 2 * n * chains * depth / statistics.median(times) / 1e9


def onednn_sgemm_ms(runs, m=MM):
    """oneDNN's own sgemm on an m x m product, called directly (the library Loom calls), in
    alternating blocks with eager's product as the items are timed."""
    try:
        lib = ctypes.CDLL("libdnnl.so.2")
    except OSError:
        return None
    a, b, c = torch.randn(m, m), torch.randn(m, m), torch.empty(m, m)
    i64, f32 = ctypes.c_int64, ctypes.c_float
    ptr = [ctypes.c_void_p(t.data_ptr()) for t in (a, b, c)]

    def call():
        lib.dnnl_sgemm(ctypes.c_char(b"N"), ctypes.c_char(b"N"), i64(m), i64(m), i64(m), f32(1),
                       ptr[0], i64(m), ptr[1], i64(m), f32(0), ptr[2], i64(m))
    return timed_pair(lambda: torch.mm(a, b), call, runs)[1] * 1e3


def triad_probe(runs):
    """GB/s of a Loom kernel computing x + 2.5 * y on 16M float32 (2 reads, 1 write): in
    alternating blocks with eager's triad, as the items are timed, and back to back. The
    second is cache as much as memory where the cache is large: this VM's 480 MiB L3 held
    the probe's 192 MB, which read 41.6 GB/s back to back and 35.8 in blocks, while Loom's
    chain read 37.8 and 22.2 GB/s (its data left the cache to eager's between blocks). The
    items' rates are set against the first."""
    xs = (torch.rand(N), torch.rand(N))
    xl = to_loom(xs)
    loom.sync()
    out = [None]
    _, t, _ = timed_pair(lambda: triad(xs), lambda: out.__setitem__(0, triad(xl)), runs)
    back_to_back = timed(lambda: out.__setitem__(0, triad(xl)), loom.sync, runs)
    return 12 * N / t / 1e9, 12 * N / back_to_back / 1e9


def cache_malloc():
    """Eager as it is meant to be measured: with a caching allocator. glibc returns every
    64 MB temporary to the system and faults fresh pages in for the next (4x the time of
    the eager chain here); with mmap off and no trimming, freed blocks are reused."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_max = -1, -4
    return libc.mallopt(m_mmap_max, 0) == 1 and libc.mallopt(m_trim_threshold, 2**31 - 1) == 1


def blas_core():
    """The kernels OpenBLAS chose for this CPU (eager's products; Loom's float32 products
    run on oneDNN, its float64 ones on OpenBLAS), and whether they fall short of the CPU:
    OpenBLAS 0.3.21 takes CPU models newer than it knows for old ones (Prescott, SSE3)
    unless OPENBLAS_CORETYPE names one."""
    try:
        lib = ctypes.CDLL("libblas.so.3")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        core = lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "not OpenBLAS", False, False
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f" in f.read()
    return core, avx512 and core.lower() in ("prescott", "nehalem", "core2", "katmai"), avx512


# OpenBLAS core types whose kernels use AVX-512.
AVX512_CORES = ("skylakex", "cooperlake", "sapphirerapids")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--eager-threads", type=int, default=os.cpu_count(),
                    help="torch.set_num_threads for eager (default: every core, as Loom uses)")
    ap.add_argument("--stock-malloc", action="store_true",
                    help="leave glibc malloc as it is (eager then pays page faults)")
    ap.add_argument("--stock-blas", action="store_true",
                    help="leave OpenBLAS's kernels as it picks them (on an AVX-512 CPU it does "
                         "not know: SSE3 ones, 5x slower; by default the bench runs again with "
                         "OPENBLAS_CORETYPE=SkylakeX) or as OPENBLAS_CORETYPE names them (by "
                         "default one naming pre-AVX-512 kernels on an AVX-512 CPU is dropped)")
    ap.add_argument("--only", nargs="+", metavar="WORD",
                    help="run only the items whose names contain one of these words "
                         "(case-insensitive; 'compile' selects the compile figures)")
    args = ap.parse_args()

    def selected(name):
        return not args.only or any(w.lower() in name.lower() for w in args.only)

    core, short, avx512 = blas_core()
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if (forced and avx512 and not args.stock_blas and
            forced.lower() not in AVX512_CORES and forced.lower() == core.lower()):
        # An environment that names older kernels (Haswell's AVX2 ones run eager's products at
        # about half speed) would flatter Loom: the bench starts again without it, and OpenBLAS
        # picks for the CPU (or, knowing none, the step below names SkylakeX).
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        env["LOOM_BENCH_DROPPED_CORETYPE"] = forced
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    if short and not args.stock_blas and "OPENBLAS_CORETYPE" not in os.environ:
        # Eager as it is meant to be measured: with the BLAS kernels for this CPU. OpenBLAS
        # reads the variable when it loads, so the bench starts again with it set.
        env = dict(os.environ, OPENBLAS_CORETYPE="SkylakeX")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    cached = not args.stock_malloc and cache_malloc()
    torch.manual_seed(0)
    torch.set_num_threads(args.eager_threads)
    rows = []
    print(f"torch {torch.__version__}, eager on {torch.get_num_threads()} threads "
          f"({'caching' if cached else 'stock'} malloc), Loom on {os.cpu_count()}")
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    dropped = os.environ.get("LOOM_BENCH_DROPPED_CORETYPE")
    print(f"OpenBLAS kernels (eager's products; Loom's float32 ones run on oneDNN): {core}" +
          (f" (OPENBLAS_CORETYPE={coretype})" if coretype else "") +
          (f" (the environment's OPENBLAS_CORETYPE={dropped} dropped; --stock-blas keeps it)"
           if dropped else "") +
          (" (this AVX-512 CPU is newer than OpenBLAS knows; --stock-blas keeps them)"
           if short else ""))
    triad_gbs = triad_b2b = fma_gfs = sgemm_ms = None
    if any(selected(item[0]) for item in ITEMS) or selected("compile"):
        triad_gbs, triad_b2b = triad_probe(args.runs)
        print(f"triad probe (Loom, 16M float32, 2 reads + 1 write): {triad_gbs:.1f} GB/s "
              f"in blocks as the items are timed ({triad_b2b:.1f} GB/s back to back)")
    if any(selected(item[0]) and item[4] for item in ITEMS):
        fma_gfs = fma_probe(args.runs)
        print(f"FMA probe (Loom, 16M float32 x 8 chains of 14 multiply-adds): "
              f"{fma_gfs:.0f} GFLOP/s (a fused kernel's reach; products are set against "
              f"oneDNN's sgemm alone)")
    rows.append(dict(item="probes", triad_gbs=triad_gbs, fma_gflops=fma_gfs,
                     triad_back_to_back_gbs=triad_b2b))
    print(f"{'item':44s} {'eager ms':>9s} {'loom ms':>9s} {'ratio':>7s} {'kernels':>8s} "
          f"{'rate':>12s} {'of peak':>11s}")
    work = [(name, nbytes, flops,
             lambda make=make, fn=fn, atol=atol: run_item(fn, make(), args.runs, atol))
            for name, make, fn, nbytes, flops, atol in ITEMS]
    work += [(name, 0, 0, lambda setup=setup: run_train_item(setup, args.runs))
             for name, setup in TRAIN_ITEMS]
    for name, nbytes, flops, run in work:
        if not selected(name):
            continue
        eager, t, kernels, fallbacks = run()
        gbs = nbytes / t / 1e9 if nbytes else None
        gfs = flops / t / 1e9 if flops else None
        row = dict(item=name, eager_ms=eager * 1e3, loom_ms=t * 1e3, ratio=eager / t,
                   kernels=kernels, fallbacks=fallbacks, gbs=gbs, gflops=gfs)
        rows.append(row)
        note = f"  ({fallbacks} CPU fallbacks)" if fallbacks else ""
        rate = f"{gbs:7.1f} GB/s {gbs / triad_gbs:5.0%} triad" if gbs else ""
        if gfs:
            # Against the library's own sgemm on the same shape, timed here.
            if sgemm_ms is None:
                sgemm_ms = onednn_sgemm_ms(args.runs) or 0.0
            rate = f"{gfs:6.0f} GF/s" + (f" {sgemm_ms / (t * 1e3):5.0%} sgemm" if sgemm_ms else "")
            row["onednn_sgemm_ms"] = sgemm_ms
        print(f"{name:44s} {eager*1e3:9.2f} {t*1e3:9.2f} {eager/t:6.2f}x {kernels:8.1f} "
              f"{rate}{note}")
    if not selected("compile"):
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        return
    cold, compile_ms, hit, load_ms, optimized_ms = compile_figures()
    print(f"new tiny kernel, compiled cold + run (median of 15): {cold:.1f} ms, of which the "
          f"compiler {compile_ms:.1f} ms (quick, -O0; optimized from the start: "
          f"{optimized_ms:.1f} ms); the same again (in-memory hit + run): {hit:.3f} ms; "
          f"loaded from the disk cache by a new process: {load_ms:.3f} ms per kernel")
    (c1, c2, c3, compiled, _), (w1, _, _, _, loaded) = first_steps()
    print(f"CNN training in a new process, empty kernel cache: first step {c1:.2f} s "
          f"({compiled} kernels compiled), second {c2 * 1e3:.0f} ms, third {c3 * 1e3:.0f} ms; "
          f"with the cache filled: first step {w1 * 1e3:.0f} ms ({loaded} kernels loaded)")
    eager_us, loom_us = host_time_per_op()
    print(f"one lazy op on a tiny tensor, host time: Loom {loom_us:.2f} us, "
          f"eager {eager_us:.2f} us")
    (e_host, e_total, _), (l_host, l_total, l_kernels) = setitem_loop()
    print(f"setitem loop, 1000 scalar writes (medians of 7 loops): Loom {l_host:.2f} us/write "
          f"host, {l_total:.2f} us/write with sync, {l_kernels} kernel(s); eager {e_total:.2f} "
          f"us/write")
    rows.append(dict(item="compile", cold_compile_ms=cold, compiler_ms=compile_ms,
                     optimized_compiler_ms=optimized_ms,
                     cache_hit_ms=hit, disk_load_ms=load_ms, cnn_first_step_cold_s=c1,
                     cnn_second_step_ms=c2 * 1e3, cnn_kernels_compiled=compiled,
                     cnn_first_step_cache_filled_ms=w1 * 1e3,
                     host_us_per_op=loom_us, eager_us_per_op=eager_us,
                     setitem_us_per_write=l_host, setitem_kernels=l_kernels,
                     triad_gbs=triad_gbs))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
