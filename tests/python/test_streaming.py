"""Large outputs written with non-temporal stores (NOTE [Streaming stores]) and row
kernels that prefetch their next row (NOTE [Row prefetch]).

The threshold for streaming is half the machine's last-level cache; the child process
below sets LOOM_STREAM_BYTES low so that every output here streams, and checks each
result, and what is left around it, against the CPU."""
import os
import re
import subprocess
import sys


# What both children start with: a check of one op against the CPU, counted.
PRELUDE = r"""
import torch, loom
import torch.nn.functional as F
D = loom.device
g = torch.Generator().manual_seed(0)
done = 0

def check(fn, *xs, **tol):
    global done
    want = fn(*xs)
    got = fn(*[x.to(D) for x in xs]).cpu()
    assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got, want, equal_nan=True, **tol)
    done += 1
"""

CHILD = PRELUDE + r"""
n = 3 * 4096 + 5  # several blocks, a partial one, thread ranges that split a block
x = torch.randn(n, generator=g)
check(lambda t: (t * 2 + 1).exp() - 3, x)
check(lambda t: t[1:] * 3, x)                      # a source one element off alignment
check(lambda t: t.double().sin(), x)
check(lambda t: (t * 100).to(torch.int64), x)
check(lambda t: t > 0, x)
check(lambda t: t.half() * 2, x)
check(lambda t: t.bfloat16() + 1, x)
check(lambda t: torch.complex(t, -t) * 2, x)
check(lambda t, u: t * u + t.flip(0), x, x.double())  # two widths prefetched, one walk back

# A destination one element off alignment: the neighbours on both sides keep their values.
for dt in (torch.float32, torch.float64, torch.float16, torch.uint8):
    base = torch.full((n + 2,), 7).to(dt)
    out = base.to(D)
    torch.add(x.to(dt).to(D), 1, out=out[1:-1])
    want = base.clone()
    want[1:-1] = x.to(dt) + 1
    torch.testing.assert_close(out.cpu(), want)
    done += 1

# Rows: one block per row (up to two blocks' worth), rows cut into blocks, and rows whose
# output is not contiguous along the loop (written with plain stores).
for shape in ((50, 3000), (4, 9000), (300, 1024), (7, 33)):
    y = torch.randn(*shape, generator=g) * 3
    check(lambda t: torch.softmax(t, 1), y, rtol=1e-5, atol=1e-6)
    check(lambda t: t - t.amax(1, True), y)
    w, b = torch.randn(shape[1], generator=g), torch.randn(shape[1], generator=g)
    check(lambda t, w, b: F.gelu(F.layer_norm(t, t.shape[-1:], w, b)), y, w, b,
          rtol=1e-5, atol=1e-5)
y = torch.randn(64, 3000, generator=g)
check(lambda t: torch.softmax(t, 1).t().contiguous(), y, rtol=1e-5, atol=1e-6)
out = torch.empty(3000, 64).to(D).t()
out.copy_(torch.softmax(y.to(D), 1))
torch.testing.assert_close(out.cpu(), torch.softmax(y, 1), rtol=1e-5, atol=1e-6)
done += 1

# Special values pass through the streamed block unchanged.
s = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40] * 2000)
check(lambda t: t * 1, s)
check(lambda t: torch.softmax(t.view(12, 1000), 1), s, rtol=1e-5, atol=1e-6)
print("checks", done)
"""


def run_child(env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                          timeout=600)


def test_streamed_outputs_match_cpu(tmp_path):
    out = run_child({"LOOM_STREAM_BYTES": "4096", "LOOM_DEBUG": "4",
                     "LOOM_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.split()[-2:] == ["checks", "29"]
    # The kernels did take the streaming path, and a softmax over rows of 4 KB prefetched.
    assert out.stderr.count("loom_stream(&p0") >= 20
    assert "__builtin_prefetch(&p1[" in out.stderr
    # Blocks cut from a longer loop prefetch their contiguous loads ahead (NOTE [Stream
    # prefetch]): a line at a time, 4 KB on, whatever the element's width.
    assert "x0 < x0e + 1024LL; x0 += 16LL) __builtin_prefetch(&p1[" in out.stderr
    assert "x0 < x0e + 512LL; x0 += 8LL) __builtin_prefetch(&p" in out.stderr


def test_streaming_off(tmp_path):
    out = run_child({"LOOM_STREAM_BYTES": "0", "LOOM_DEBUG": "4", "LOOM_CACHE_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-4000:]
    assert "void kernel" in out.stderr and "loom_stream(&p0" not in out.stderr


ROWS_CHILD = r"""
import torch, loom
import torch.nn.functional as F
x, w, b = torch.randn(64, 3000), torch.randn(3000), torch.randn(3000)
got = F.gelu(F.layer_norm(x.to(loom.device), (3000,), w.to(loom.device), b.to(loom.device)))
torch.testing.assert_close(got.cpu(), F.gelu(F.layer_norm(x, (3000,), w, b)), rtol=1e-5, atol=1e-5)
import sys
print("SOFTMAX", file=sys.stderr, flush=True)
got = torch.softmax(x.to(loom.device) * 2, 1)
torch.testing.assert_close(got.cpu(), torch.softmax(x * 2, 1), rtol=1e-5, atol=1e-6)
print("ok")
"""


def test_cut_rows_prefetch_only_what_moves_with_them(tmp_path):
    """A row longer than two blocks is cut into blocks, each prefetching what the next row's
    block will read (NOTE [Stream prefetch]); the weights every row reads are not, nor
    what the output loop does not read."""
    env = dict(os.environ, LOOM_STREAM_BYTES="4096", LOOM_DEBUG="4", LOOM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", ROWS_CHILD], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.split() == ["ok"], out.stderr[-4000:]
    ln, softmax = out.stderr.split("SOFTMAX")
    src = ln[ln.index("void kernel"):]
    assert "x1o += 64LL" in src
    assert src.count("x1 < x1e + 1024LL; x1 += 16LL) __builtin_prefetch(&p") == 1
    # Softmax's output loop reads exp(x - max) back from its sum's row cache, not x: its
    # blocks prefetch nothing.
    src = softmax[softmax.index("void kernel"):]
    assert "x1o += 64LL" in src and re.search(r"\(row\d+\[x1\]\)", src)
    assert "x1e + " not in src


PIPE_CHILD = PRELUDE + r"""
# Inputs of 1 MB or more prefetch their next row, so their rows pipeline: row counts that
# split unevenly between the threads' ranges (ranges of one row included), rows of one
# block and rows of several.
for rows, cols in ((257, 1024), (3, 131072), (129, 4096), (1025, 256)):
    y = torch.randn(rows, cols, generator=g) * 3
    w, b = torch.randn(cols, generator=g), torch.randn(cols, generator=g)
    check(lambda t: torch.softmax(t, 1), y, rtol=1e-5, atol=1e-6)
    check(lambda t: torch.log_softmax(t, 1), y, rtol=1e-5, atol=1e-5)
    check(lambda t, w, b: F.gelu(F.layer_norm(t, t.shape[-1:], w, b)), y, w, b,
          rtol=1e-5, atol=1e-5)
    check(lambda t: t - t.amax(1, True) + t.mean(1, True), y, rtol=1e-5, atol=1e-5)
y = torch.randn(300, 1024, generator=g, dtype=torch.float64)
check(lambda t: torch.softmax(t, 1), y)
check(lambda t: torch.softmax(t.float(), 1).half(), y, rtol=1e-3, atol=1e-3)
y = torch.randn(600, 2048, generator=g)
check(lambda t: torch.softmax(t.bfloat16(), 1), y, rtol=1e-2, atol=1e-2)
check(lambda t: t.argmax(1, True) + t, y)                 # an index kept for the next row
s = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40] * 86016)
check(lambda t: torch.softmax(t.view(504, 1024), 1), s, rtol=1e-5, atol=1e-6)
print("checks", done)
"""


def test_pipelined_rows_match_cpu(tmp_path):
    """NOTE [Row pipelining]: a row's results are written during the next row's last pass;
    the last row of each thread's range after the loop."""
    env = dict(os.environ, LOOM_STREAM_BYTES="4096", LOOM_DEBUG="4", LOOM_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", PIPE_CHILD], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.split()[-2:] == ["checks", "21"]
    assert out.stderr.count("if (x0 > start) {") >= 10
    assert out.stderr.count("if (end > start) {") == out.stderr.count("if (x0 > start) {")
    assert re.search(r"\(rowprev\d+\[x1\]\)", out.stderr)
