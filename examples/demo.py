"""The same computation on Loom and on CPU eager: results, Loom's kernels, and times.

A small MLP-style forward pass and a row softmax, built from ops that Loom fuses.
"""
import time

import torch
import loom


def program(x, w):
    h = (x * w + 0.5).tanh()            # elementwise chain: fuses into one kernel
    p = torch.softmax(h, dim=1)          # max, sum-of-exp, normalise
    return p.sum(1), (h * 2 + 1).sum(1)  # reductions with fused prologues


def run(device):
    torch.manual_seed(0)
    x = torch.randn(512, 1024).to(device)
    w = torch.randn(1024).to(device)
    loom.sync()
    loom.reset_metrics()
    t0 = time.perf_counter()
    a, b = program(x, w)
    a, b = a.cpu(), b.cpu()
    return a, b, time.perf_counter() - t0


def main():
    a_cpu, b_cpu, t_cpu = run("cpu")
    a_lm, b_lm, t_lm = run(loom.device)
    m = loom.metrics()
    a_lm2, b_lm2, t_lm2 = run(loom.device)  # second run: every kernel is cached
    print("row sums of softmax (first 4):  cpu", a_cpu[:4].tolist())
    print("                                loom", a_lm[:4].tolist())
    print("sum(2*tanh(xw+.5)+1) (first 4): cpu", b_cpu[:4].tolist())
    print("                                loom", b_lm[:4].tolist())
    torch.testing.assert_close(a_lm, a_cpu)
    torch.testing.assert_close(b_lm, b_cpu, rtol=1e-4, atol=1e-3)
    print(f"loom: {m['kernels_run']} kernels run, {m['kernels_compiled']} compiled, "
          f"fallbacks: {m['fallbacks'] or 'none'}")
    print(f"time: cpu {t_cpu*1e3:.1f} ms, loom first run {t_lm*1e3:.1f} ms (compiling), "
          f"loom cached {t_lm2*1e3:.1f} ms")
    print("results match")


if __name__ == "__main__":
    main()
