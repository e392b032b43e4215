"""Runs small Loom programs one process each and reports which fail, and how.

Part of tests/torch2/run.sh: on a new torch release a single failing op can abort the
process, so each program runs alone and a crash costs only itself.
"""
import concurrent.futures
import os
import subprocess
import sys

PRELUDE = "import torch, loom\ndev = loom.device\ntorch.manual_seed(0)\n"
PROGRAMS = {
    "move": "x = torch.randn(4, 4); assert torch.equal(x.to(dev).cpu(), x)",
    "add": "x = torch.randn(4, 4); assert torch.equal((x.to(dev) + x.to(dev)).cpu(), x + x)",
    "mul_scalar": "x = torch.randn(4, 4); assert torch.equal((x.to(dev) * 2).cpu(), x * 2)",
    "exp": "x = torch.randn(4, 4); torch.testing.assert_close(x.to(dev).exp().cpu(), x.exp())",
    "sum": "x = torch.randn(4, 4); torch.testing.assert_close(x.to(dev).sum(1).cpu(), x.sum(1))",
    "chain": "x = torch.randn(64, 64); f = lambda t: (((t * 2 + 1).exp() - 3).abs() * 0.5).sum(1)\n"
             "loom.reset_metrics(); r = f(x.to(dev)).cpu()\n"
             "assert loom.metrics()['kernels_run'] == 1, loom.metrics()['kernels_run']\n"
             "torch.testing.assert_close(r, f(x))",
    "print": "print(torch.arange(3.0).to(dev))",
    "inplace_view": "b = torch.zeros(4, 4).to(dev); v = b.t()[1]; v.add_(1)\n"
                    "assert b.cpu()[:, 1].eq(1).all() and b.cpu().sum() == 4",
    "matmul": "a, b = torch.randn(8, 5), torch.randn(5, 3)\n"
              "torch.testing.assert_close((a.to(dev) @ b.to(dev)).cpu(), a @ b)",
    "linear": "m = torch.nn.Linear(5, 3); x = torch.randn(2, 5)\n"
              "torch.testing.assert_close(m.to(dev)(x.to(dev)).cpu(), m.cpu()(x))",
    "randn": "a = torch.randn(3, device=dev); assert a.device == dev",
    "backward": "w = torch.randn(3, requires_grad=True); wl = w.detach().to(dev).requires_grad_()\n"
                "(wl * wl).sum().backward(); torch.testing.assert_close(wl.grad.cpu(), 2 * w.detach())",
    "softmax": "x = torch.randn(6, 7)\n"
               "torch.testing.assert_close(x.to(dev).softmax(1).cpu(), x.softmax(1))",
    "conv": "c = torch.nn.Conv2d(3, 4, 3); x = torch.randn(2, 3, 8, 8)\n"
            "torch.testing.assert_close(c.to(dev)(x.to(dev)).cpu(), c.cpu()(x), rtol=1e-4, atol=1e-5)",
    "setitem": "x = torch.zeros(10).to(dev)\nfor i in range(10): x[i] = i\n"
               "assert torch.equal(x.cpu(), torch.arange(10.0))",
    "index": "x = torch.randn(5, 3); i = torch.tensor([4, 0, 2])\n"
             "assert torch.equal(x.to(dev)[i.to(dev)].cpu(), x[i])",
}


def main(out):
    env = dict(os.environ, TORCH_SHOW_CPP_STACKTRACES="1", PYTHONFAULTHANDLER="1")

    def run(body):
        return subprocess.run([sys.executable, "-c", PRELUDE + body], env=env, text=True,
                              capture_output=True, timeout=120)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        results = dict(zip(PROGRAMS, pool.map(run, PROGRAMS.values())))
    failed = 0
    with open(out, "w") as log:
        for name, r in results.items():
            ok = r.returncode == 0
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}")
            if not ok:
                text = (r.stdout + r.stderr).strip().splitlines()
                log.write(f"=== {name} (exit {r.returncode})\n" + "\n".join(text[-60:]) + "\n")
                errs = [l for l in text if "Error" in l or "error" in l]
                print("     " + (errs[-1] if errs else text[-1] if text else "")[:300])
    print(f"{len(PROGRAMS) - failed} passed, {failed} failed")


if __name__ == "__main__":
    main(sys.argv[1])
