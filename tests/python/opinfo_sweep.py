#!/usr/bin/python3
"""PyTorch's OpInfo database run on Loom and on the CPU, compared sample by sample.

Every op of ``torch.testing._internal.common_methods_invocations.op_db`` (torch 1.13)
that is not excluded below is called on each of its sample inputs, made on the CPU and
mirrored onto Loom (same sizes, strides, storage offset and storage contents). Loom runs
with ``LOOM_FALLBACK=error``: a sample that needs a CPU fallback is "not covered", not
failed. Otherwise the two runs must agree on values (``assert_close``, NaNs equal), dtype,
shape, strides and storage offset where the CPU's result is dense, and on the type of an
exception. For ops with autograd, the gradients of the sum of the floating outputs with
respect to the floating inputs are compared too.

  tests/python/opinfo_sweep.py                   # the full sweep (make test-opinfo)
  tests/python/opinfo_sweep.py --ops 'nn.functional.*' --json out.json
  tests/python/opinfo_sweep.py --update-expected # rewrite the default subset's list

The sweep runs in worker processes; a sample that crashes its worker is recorded as a
failure and a new worker goes on with the next one. ``tests/python/test_opinfo.py`` runs
the default subset (the first sample of each op) under pytest.
"""
import argparse
import collections
import fnmatch
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXPECTED = HERE / "opinfo_expected.txt"
# torch.testing._internal imports expecttest, which Debian does not package.
sys.path.insert(0, str(REPO / "tests" / "upstream"))

import torch  # noqa: E402  (before loom)

import loom  # noqa: E402

DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool)
FLOATS = (torch.float32, torch.float64)
# float32: the 1e-4 relative, since fused kernels sum in other orders than the
# CPU's; float64 keeps assert_close's defaults.
TOLERANCES = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float16: dict(rtol=1e-3, atol=1e-3),
              torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2), torch.complex64: dict(rtol=1e-4, atol=1e-5)}

# Ops the sweep leaves out, by name pattern, with the reason.
EXCLUDED = [
    ("fft.*", "FFTs are not Loom ops (spectral transforms are out of scope)"),
    ("stft", "FFT based"),
    ("istft", "FFT based"),
    ("sparse.*", "sparse layouts are not supported on Loom"),
    ("to_sparse", "sparse layouts are not supported on Loom"),
    ("linalg.*", "linear algebra decompositions and solvers are out of scope (slow, LAPACK)"),
    ("cholesky*", "LAPACK decomposition"),
    ("symeig", "LAPACK decomposition"),
    ("lu", "LAPACK decomposition"), ("lu_*", "LAPACK decomposition"),
    ("qr", "LAPACK decomposition"), ("geqrf", "LAPACK decomposition"),
    ("ormqr", "LAPACK decomposition"), ("svd*", "LAPACK decomposition"),
    ("pca_lowrank", "LAPACK decomposition, random"), ("pinverse", "LAPACK decomposition"),
    ("triangular_solve", "LAPACK solver"), ("matrix_exp", "LAPACK based"),
    ("det", "LAPACK decomposition"), ("logdet", "LAPACK decomposition"),
    ("inverse", "LAPACK decomposition"), ("eig*", "LAPACK decomposition"),
    ("slogdet", "LAPACK decomposition"),
    ("nn.functional.ctc_loss", "slow; not used by the issue's models"),
    ("jiterator_*", "CUDA-only ops"),
]
# Linear algebra that is not a decomposition stays in.
INCLUDED = {"linalg.vector_norm", "linalg.cross", "linalg.vecdot", "linalg.multi_dot"}

# Ops whose values legitimately differ: only dtype, shape, strides and errors are compared.
VALUES_DIFFER = {
    "uniform": "random: Loom's generator is not the CPU's stream (README)",
    "normal": "random", "bernoulli": "random", "multinomial": "random",
    "randn": "random", "randn_like": "random", "rand_like": "random",
    "randint_like": "random", "randint": "random", "cauchy": "random",
    "exponential": "random", "geometric": "random", "log_normal": "random",
    "nn.functional.dropout": "random", "nn.functional.dropout2d": "random",
    "nn.functional.dropout3d": "random", "nn.functional.alpha_dropout": "random",
    "nn.functional.feature_alpha_dropout": "random", "nn.functional.rrelu": "random",
    "nn.functional.fractional_max_pool2d": "random",
    "nn.functional.fractional_max_pool3d": "random",
    "nn.functional.gumbel_softmax": "random",
    "nn.functional.multi_head_attention_forward": "random: 2.x's sample trains with dropout 0.5 "
                                                  "(without it, values and gradients match)",
    "empty": "uninitialized memory", "empty_like": "uninitialized memory",
    "new_empty": "uninitialized memory", "new_empty_strided": "uninitialized memory",
    "empty_strided": "uninitialized memory", "empty_permuted": "uninitialized memory",  # 2.x
}


# Ops whose gradients are not compared.
NO_BACKWARD = {
    "as_strided_scatter": "torch 1.13's backward returns new_empty_strided with only the "
                          "scattered slice written: the rest is uninitialized, on the CPU too",
}

# Ops whose index results may order tied elements differently: (position of dim in args,
# which output holds the indices). The CPU's sort is not stable unless asked to be, and
# its topk selects with a partial sort, so tied values may come back in any order.
TIED_INDICES = {"sort": (0, 1), "argsort": (0, None), "topk": (1, 1)}


def untie(op, s, want, got):
    """Loom's indices, if they pick the CPU's values (and no index twice), become the CPU's."""
    pos, which = TIED_INDICES[op.name]
    if op.name == "sort" and s.kwargs.get("stable"):
        return got
    dim = s.kwargs.get("dim", s.args[pos] if len(s.args) > pos else -1)
    wi, gi = (want, got) if which is None else (want[which], got[which])
    if not isinstance(gi, torch.Tensor) or gi.shape != wi.shape or gi.dtype != wi.dtype:
        return got
    if gi.stride() != wi.stride() or s.input.dim() == 0:
        return got
    g = gi.cpu()
    x = s.input.detach()
    picked_same = torch.equal(x.gather(dim, g).isnan(), x.gather(dim, wi).isnan()) and bool(
        (x.gather(dim, g) == x.gather(dim, wi)).logical_or(x.gather(dim, g).isnan()).all())
    distinct = g.shape[dim] < 2 or bool((g.sort(dim).values.diff(dim=dim) != 0).all())
    if not (picked_same and distinct):
        return got
    if which is None:
        return wi.to(gi.device)
    return type(got)(wi.to(gi.device) if i == which else t for i, t in enumerate(got))


# Samples whose values legitimately differ (random), by op.
VALUES_DIFFER_IF = {
    "nn.functional._scaled_dot_product_attention": lambda s: s.kwargs.get("dropout_p", 0) > 0,
}

# Ops whose tensor arguments after the input must be CPU tensors (PyTorch checks).
CPU_ARGS = {"tensor_split": "tensor_indices_or_sections must be on the CPU"}


def exclusion_reason(op):
    if op.name in INCLUDED:
        return None
    for pattern, reason in EXCLUDED:
        if fnmatch.fnmatchcase(op.name, pattern):
            return reason
    if not any(d in op.supported_dtypes("cpu") for d in DTYPES):
        return "no float32/float64/int64/bool on the CPU"
    return None


def op_id(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def load_ops():
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


# ---- moving samples between devices -------------------------------------------------------

def tree_map(fn, x):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(tree_map(fn, y) for y in x)
    if isinstance(x, dict):
        return {k: tree_map(fn, v) for k, v in x.items()}
    return x


def tree_leaves(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for y in x for t in tree_leaves(y)]
    if isinstance(x, dict):
        return [t for y in x.values() for t in tree_leaves(y)]
    return []


def mirror(t, grad=False):
    """t on Loom: the same sizes, strides and storage offset over a copy of its storage."""
    if not isinstance(t, torch.Tensor) or t.device.type != "cpu" or t.layout != torch.strided:
        return t
    with torch.no_grad():
        d = t.detach()
        if d.is_conj():
            d = d.resolve_conj()
        if d.is_neg():
            d = d.resolve_neg()
        n = d.storage().size()
        flat = d.as_strided((n,), (1,), 0).to(loom.device)
        m = flat.as_strided(d.size(), d.stride(), d.storage_offset())
    m = m.detach()
    if grad and t.requires_grad:
        m.requires_grad_(True)
    return m


# ---- comparing results --------------------------------------------------------------------

def is_dense(t):
    """Non-overlapping and dense: the strides are a permutation of contiguous ones."""
    dims = sorted((s, n) for s, n in zip(t.stride(), t.size()) if n != 1)
    expected = 1
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


def compare(cpu, lm, check_values, path="out", on_loom=True, tol=None):
    """on_loom: whether the Loom run had Loom inputs (else its results stay on the CPU);
    tol: assert_close tolerances for floating results (default: by the result's dtype)."""
    if isinstance(cpu, torch.Tensor):
        assert isinstance(lm, torch.Tensor), f"{path}: Loom returned {type(lm).__name__}"
        want_dev = loom.device.type if cpu.device.type == "cpu" and on_loom else cpu.device.type
        assert lm.device.type == want_dev, f"{path}: device {lm.device}, not {want_dev}"
        assert lm.dtype == cpu.dtype, f"{path}: dtype {lm.dtype}, CPU {cpu.dtype}"
        assert lm.shape == cpu.shape, f"{path}: shape {tuple(lm.shape)}, CPU {tuple(cpu.shape)}"
        if cpu.layout == torch.strided and is_dense(cpu) and cpu.numel() > 1:
            assert lm.stride() == cpu.stride(), f"{path}: strides {lm.stride()}, CPU {cpu.stride()}"
            assert lm.storage_offset() == cpu.storage_offset(), (
                f"{path}: storage offset {lm.storage_offset()}, CPU {cpu.storage_offset()}")
        if check_values:
            got = lm.detach().cpu()
            kw = tol if tol is not None and (cpu.is_floating_point() or cpu.is_complex()) \
                else TOLERANCES.get(cpu.dtype, {})
            try:
                torch.testing.assert_close(got, cpu.detach(), equal_nan=True, check_stride=False,
                                           check_device=False, **kw)
            except AssertionError as e:
                lines = str(e).strip().splitlines()
                raise AssertionError(f"{path}: values: " + " ".join(lines[:4])) from None
        return
    if isinstance(cpu, (list, tuple)):
        assert isinstance(lm, (list, tuple)) and len(lm) == len(cpu), (
            f"{path}: Loom returned {type(lm).__name__} of {len(lm) if hasattr(lm, '__len__') else '?'}")
        for i, (c, m) in enumerate(zip(cpu, lm)):
            compare(c, m, check_values, f"{path}[{i}]", on_loom, tol)
        return
    if isinstance(cpu, float) and check_values:
        assert isinstance(lm, (float, int)), f"{path}: Loom returned {type(lm).__name__}"
        torch.testing.assert_close(lm, cpu, equal_nan=True, rtol=1e-4, atol=1e-5)
        return
    if check_values or not isinstance(cpu, (int, float, complex)):
        assert type(lm) == type(cpu) and lm == cpu, f"{path}: Loom {lm!r}, CPU {cpu!r}"


def sample_tolerance(s):
    """float32 tolerances when a float32 (or narrower) input feeds a float64 result."""
    narrow = [t.dtype for t in tree_leaves([s.input, s.args, s.kwargs])
              if t.is_floating_point() and t.dtype != torch.float64]
    return TOLERANCES[torch.float32] if narrow else None


def realize(x):
    """Forces every Loom result (lazy) so that faults found at run time raise here."""
    ts = [t for t in tree_leaves(x) if t.device == loom.device or t.device.type == loom.device.type]
    if ts:
        loom.sync()
        for t in ts:
            t.detach().cpu()


# ---- running one sample -------------------------------------------------------------------

class Fallback(Exception):
    pass


def run_loom(fn):
    """Runs fn with CPU fallbacks as errors; Fallback(op) if one was needed."""
    old = os.environ.get("LOOM_FALLBACK")
    os.environ["LOOM_FALLBACK"] = "error"
    loom.reset_metrics()
    try:
        out = fn()
        realize(out)
    except NotImplementedError as e:
        msg = str(e)
        if "Loom has no kernel for " in msg:
            raise Fallback(msg.split("Loom has no kernel for ")[1].split()[0].rstrip(",")) from None
        raise
    finally:
        if old is None:
            del os.environ["LOOM_FALLBACK"]
        else:
            os.environ["LOOM_FALLBACK"] = old
    fb = loom.metrics()["fallbacks"]
    if fb:
        raise Fallback(",".join(sorted(fb)))
    return out


def on_device(s):
    """A device named in the sample (factory ops, `to`) becomes Loom's in the mirror."""
    def swap(x):
        if isinstance(x, torch.device) and x.type == "cpu" or isinstance(x, str) and x == "cpu":
            return loom.device
        return x
    s.args = type(s.args)(swap(a) for a in s.args)
    s.kwargs = {k: swap(v) for k, v in s.kwargs.items()}


def call(op, s):
    return op(s.input, *s.args, **s.kwargs)


def check_forward(op, s, check_values):
    """Returns None (agree) or a message; raises Fallback."""
    try:
        want = call(op, s)
        want_err = None
    except Exception as e:  # noqa: BLE001  (any CPU error must be matched)
        want, want_err = None, e
    ls = s.transform(mirror)
    on_device(ls)
    if op.name in CPU_ARGS:
        ls.args = s.args
    try:
        got = run_loom(lambda: call(op, ls))
        got_err = None
    except Fallback:
        raise
    except Exception as e:  # noqa: BLE001
        got, got_err = None, e
    if want_err is not None or got_err is not None:
        if want_err is None:
            return f"Loom raised {type(got_err).__name__}: {first_line(got_err)}"
        if got_err is None:
            return f"CPU raised {type(want_err).__name__}: {first_line(want_err)}; Loom did not"
        if type(got_err) is not type(want_err):
            return (f"Loom raised {type(got_err).__name__}: {first_line(got_err)}; CPU "
                    f"{type(want_err).__name__}: {first_line(want_err)}")
        return None
    on_loom = ls.kwargs.get("device") == loom.device or any(
        t.device.type == loom.device.type for t in tree_leaves([ls.input, ls.args, ls.kwargs]))
    if op.name in TIED_INDICES:
        got = untie(op, s, want, got)
    try:
        compare(want, got, check_values, on_loom=on_loom, tol=sample_tolerance(s))
    except AssertionError as e:
        if check_values and no_worse_than_cpu(op, s, want, got):
            return None
        return first_line(e, 300)
    return None


def no_worse_than_cpu(op, s, want, got):
    """Whether Loom's floating results, off the CPU's by more than the tolerance, are as
    close to the op's float64 result as the CPU's are, or within 8 units in the last place
    of their largest element (worst element against worst element). A long sum (a
    convolution over hundreds of terms) can put both a few units of 1e-5 from the exact
    value at an element that cancels to near zero, each library by its own order."""
    def to64(x):
        return x.double() if isinstance(x, torch.Tensor) and x.dtype in (
            torch.float32, torch.float16, torch.bfloat16) else x
    try:
        exact = op(to64(s.input), *[to64(a) for a in s.args],
                   **{k: to64(v) for k, v in s.kwargs.items()})
    except Exception:  # noqa: BLE001  (no float64 form: no second opinion)
        return False
    outs = [(w, g, x) for w, g, x in zip(tree_leaves(want), tree_leaves(got), tree_leaves(exact))]
    if not outs or len(outs) != len(tree_leaves(want)):
        return False
    for w, g, x in outs:
        if not (isinstance(w, torch.Tensor) and w.is_floating_point()):
            return False
        g = g.detach().cpu().double()
        if g.shape != x.shape or w.dtype == torch.float64:
            return False
        x = x.detach()
        bound = max((w.detach().double() - x).abs().max().item(),
                    8 * torch.finfo(w.dtype).eps * x.abs().max().item())
        if not (g - x).abs().max().item() <= bound:
            return False
    return True


def float_outputs(out):
    return [t for t in tree_leaves(out) if t.requires_grad and t.dtype in FLOATS]


def check_backward(op, s):
    """Grads of the sum of the floating outputs w.r.t. the floating inputs, on both devices."""
    cpu_inputs = [t for t in tree_leaves([s.input, s.args, s.kwargs]) if t.requires_grad]
    if not cpu_inputs:
        return None
    try:
        out = float_outputs(s.output_process_fn_grad(call(op, s)))
        if not out:
            return None
        want = torch.autograd.grad(sum(o.sum() for o in out), cpu_inputs, allow_unused=True)
    except Exception:  # noqa: BLE001  (forward already compared; nothing to differentiate)
        return None
    mirrors = {}

    def mirror_grad(t):
        m = mirror(t, grad=True)
        if t.requires_grad:
            mirrors[id(t)] = m
        return m

    ls = s.transform(lambda t: t)  # a shallow copy; tensors are swapped below
    ls.input = tree_map(mirror_grad, s.input)
    ls.args = s.args if op.name in CPU_ARGS else tree_map(mirror_grad, s.args)
    ls.kwargs = tree_map(mirror_grad, s.kwargs)
    on_device(ls)
    loom_inputs = [mirrors[id(t)] for t in cpu_inputs]

    def run():
        o = float_outputs(ls.output_process_fn_grad(call(op, ls)))
        return torch.autograd.grad(sum(x.sum() for x in o), loom_inputs, allow_unused=True)

    try:
        got = run_loom(run)
    except Fallback:
        raise
    except Exception as e:  # noqa: BLE001
        return f"backward: Loom raised {type(e).__name__}: {first_line(e)}"
    try:
        compare(list(want), list(got), True, "grad", tol=sample_tolerance(s))
    except AssertionError as e:
        return "backward: " + first_line(e, 300)
    return None


def first_line(e, n=160):
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__)[:n]


# ---- walking the database -----------------------------------------------------------------

def op_dtypes(op, dtypes):
    supported = op.supported_dtypes("cpu")
    return [d for d in dtypes if d in supported]


def samples(op, dtype, requires_grad=False):
    torch.manual_seed(0)  # sample functions draw random values; the same ones every run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(op.sample_inputs("cpu", dtype, requires_grad=requires_grad))


def sweep_op(op, dtypes=DTYPES, max_samples=None, backward=True, start=0, announce=None):
    """Yields one record per (dtype, sample, direction): status pass | fail | fallback.

    Records before the start-th are skipped; announce(rec) is called before each runs."""
    always_check = op.name not in VALUES_DIFFER
    k = 0
    for dtype in op_dtypes(op, dtypes):
        try:
            ss = samples(op, dtype)
        except Exception as e:  # noqa: BLE001
            yield dict(op=op_id(op), dtype=str(dtype)[6:], sample=-1, kind="fwd", status="fail",
                       detail=f"sample_inputs raised {type(e).__name__}: {first_line(e)}")
            continue
        grad = (backward and op.supports_autograd and dtype in FLOATS and always_check
                and op.name not in NO_BACKWARD
                and dtype in op.supported_backward_dtypes("cpu"))
        gss = samples(op, dtype, requires_grad=True) if grad else []
        for i, s in enumerate(ss[:max_samples]):
            check_values = always_check and not (
                op.name in VALUES_DIFFER_IF and VALUES_DIFFER_IF[op.name](s))
            for kind in ("fwd", "bwd"):
                if kind == "bwd" and (i >= len(gss) or not check_values):
                    continue
                k += 1
                if k <= start:
                    continue
                rec = dict(op=op_id(op), dtype=str(dtype)[6:], sample=i, kind=kind,
                           k=k, summary=s.summary()[:200] if hasattr(s, "summary") else "")
                if announce is not None:
                    announce(rec)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        if kind == "fwd":
                            msg = check_forward(op, s, check_values)
                        else:
                            msg = check_backward(op, gss[i])
                        rec.update(status="pass" if msg is None else "fail", detail=msg or "")
                    except Fallback as f:
                        rec.update(status="fallback", detail=str(f))
                yield rec


def first_sample_record(op):
    """The default subset's check of op: its first sample in the first dtype it supports."""
    for rec in sweep_op(op, dtypes=op_dtypes(op, DTYPES)[:1], max_samples=1):
        if rec["status"] != "pass":
            return rec
    return dict(op=op_id(op), dtype="", sample=0, kind="fwd", status="pass", detail="")


# ---- the expected list of the default subset ----------------------------------------------

def read_expected(path=EXPECTED):
    expected = {}
    if path.exists():
        for line in path.read_text().splitlines():
            key, _, reason = line.partition("#")
            if key.strip():
                expected[key.strip()] = reason.strip()
    return expected


EXPECTED_HEADER = """\
# The default subset of the OpInfo sweep (tests/python/test_opinfo.py: the first sample of
# every op, forward and backward) that does not pass on Loom: op id, then `# reason`.
# "not covered" ops need a CPU fallback; the others disagree with the CPU. Each entry is
# a strict xfail: an entry that passes fails the test until it is removed. Rewrite with
# `tests/python/opinfo_sweep.py --update-expected` (keeps reasons written here).
"""


def write_expected(records, path=EXPECTED):
    old = read_expected(path)
    lines = [EXPECTED_HEADER.rstrip("\n")]
    groups = collections.defaultdict(list)
    for r in records:
        if r["status"] == "pass":
            continue
        reason = old.get(r["op"]) or subset_reason(r)
        groups["not covered" if r["status"] == "fallback" else "mismatch"].append(
            f"{r['op']}  # {reason}")
    for title in ("mismatch", "not covered"):
        if groups[title]:
            lines += ["", f"# {title}"] + sorted(groups[title])
    path.write_text("\n".join(lines) + "\n")


def subset_reason(rec):
    if rec["status"] == "fallback":
        return f"not covered: no Loom kernel for {rec['detail']}"
    return rec["detail"].replace("#", "")[:200]


# ---- the driver: workers, crash recovery, summary -----------------------------------------

def worker(args):
    """Runs ops[first:] (op_db indices) from record `start` of the first; one JSON line each."""
    ops = load_ops()
    out = sys.stdout
    sys.stdout = sys.stderr  # prints from ops must not corrupt the record stream

    def emit(rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    for n, idx in enumerate(args.indices):
        op = ops[idx]
        emit(dict(event="op", idx=idx))
        if args.subset:
            rec = first_sample_record(op)
            rec.update(idx=idx, k=1)
            emit(rec)
            continue
        start = args.start if n == 0 else 0
        for rec in sweep_op(op, max_samples=args.max_samples, backward=not args.no_backward,
                            start=start, announce=lambda r: emit(dict(r, event="begin", idx=idx))):
            emit(dict(rec, idx=idx))
    emit(dict(event="done"))


STOP = threading.Event()
WORKERS = set()  # live worker processes, ended on an interrupt


def run_worker(indices, opts, records, log):
    """Runs a chain of worker processes over indices until all are done."""
    import select
    start = 0
    while indices:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--start", str(start),
               "--max-samples", str(opts.max_samples or 0)] + (["--subset"] if opts.subset else []) \
            + (["--no-backward"] if opts.no_backward else []) + ["--indices"] + [str(i) for i in indices]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
        WORKERS.add(proc)
        current, begun, done = None, None, False
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], opts.timeout)
            if not ready:
                proc.kill()
                reason = f"timed out after {opts.timeout} s"
                break
            line = proc.stdout.readline()
            if not line:
                reason = f"worker died (exit {proc.wait()})"
                break
            rec = json.loads(line)
            ev = rec.pop("event", None)
            if ev == "done":
                done = True
                break
            if ev == "op":
                current, begun = rec["idx"], None
                indices = indices[indices.index(current):]
            elif ev == "begin":
                begun = rec
            else:
                begun = None
                records.append(rec)
                if opts.verbose and rec["status"] == "fail":
                    print(f"FAIL {rec['op']} {rec['dtype']} #{rec['sample']} {rec['kind']}: "
                          f"{rec['detail']}", flush=True)
        proc.stdout.close()
        proc.wait()
        WORKERS.discard(proc)
        if done or STOP.is_set():
            return
        if current is None:
            raise RuntimeError(f"the sweep's worker failed before its first op: {reason}")
        if begun is None:  # died between records: count the op's next record as the crash
            begun = dict(op=op_id(load_ops()[current]), dtype="?", sample=-1, kind="?",
                         k=start if not records else records[-1].get("k", 0) + 1)
        begun.update(status="fail", detail=reason, idx=current)
        records.append(begun)
        print(f"CRASH {begun['op']} {begun['dtype']} #{begun['sample']} {begun['kind']}: "
              f"{reason}", flush=True)
        if opts.subset:
            indices, start = indices[1:], 0
        else:
            start = begun["k"]


def summarize(records, walked, excluded):
    by_op = collections.defaultdict(collections.Counter)
    for r in records:
        by_op[r["op"]][r["status"]] += 1
    covered = [o for o in walked if by_op[o]["fallback"] == 0 and by_op[o]]
    partial = [o for o in walked if by_op[o]["fallback"] and (by_op[o]["pass"] or by_op[o]["fail"])]
    count = collections.Counter((r["kind"], r["status"]) for r in records)
    fails = [r for r in records if r["status"] == "fail"]
    fallbacks = collections.Counter()
    for r in records:
        if r["status"] == "fallback":
            for name in r["detail"].split(","):
                fallbacks[name] += 1
    causes = collections.Counter()
    for r in fails:
        causes[normalize(r["detail"])] += 1
    return dict(ops_walked=len(walked), ops_excluded=len(excluded), ops_covered=len(covered),
                ops_partly_covered=len(partial),
                ops_passing=sum(1 for o in covered if by_op[o]["fail"] == 0),
                samples={f"{k}_{s}": n for (k, s), n in sorted(count.items())},
                failing=[f"{r['op']} {r['dtype']} #{r['sample']} {r['kind']}: {r['detail']}"
                         for r in fails],
                failing_ops=sorted({r["op"] for r in fails}),
                top_causes=causes.most_common(25), top_fallbacks=fallbacks.most_common(40))


def normalize(detail):
    import re
    d = re.sub(r"out(\[\d+\])*|grad\[\d+\]", "out", detail)
    d = re.sub(r"\(.*?\)|\d+(\.\d+)?(e-?\d+)?", "N", d)
    return d[:120]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default="*", help="fnmatch pattern(s) of op ids, comma separated")
    ap.add_argument("--json", type=Path, help="write the records and summary here")
    ap.add_argument("--max-samples", type=int, default=0, help="samples per op and dtype (0: all)")
    ap.add_argument("--no-backward", action="store_true")
    ap.add_argument("--subset", action="store_true",
                    help="the default subset: the first sample of each op (as test_opinfo.py)")
    ap.add_argument("--update-expected", action="store_true",
                    help="run the subset and rewrite opinfo_expected.txt")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes in parallel")
    ap.add_argument("--timeout", type=int, default=600, help="seconds without a record")
    ap.add_argument("-v", "--verbose", action="store_true", help="print failures as they come")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--indices", type=int, nargs="*", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    opts.max_samples = opts.max_samples or None
    if opts.worker:
        return worker(opts)
    opts.subset = opts.subset or opts.update_expected

    ops = load_ops()
    patterns = opts.ops.split(",")
    chosen = [i for i, op in enumerate(ops)
              if any(fnmatch.fnmatchcase(op_id(op), p) for p in patterns)]
    excluded = {op_id(ops[i]): exclusion_reason(ops[i]) for i in chosen
                if exclusion_reason(ops[i])}
    walk = [i for i in chosen if op_id(ops[i]) not in excluded]
    walked = list(dict.fromkeys(op_id(ops[i]) for i in walk))
    records, t0 = [], time.monotonic()
    log = open(os.environ.get("OPINFO_LOG", os.devnull), "a")
    threads = [threading.Thread(target=run_worker, args=(walk[j::opts.jobs], opts, records, log))
               for j in range(opts.jobs)]
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupt)  # also when started in the background
    signal.signal(signal.SIGTERM, interrupt)
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
    except KeyboardInterrupt:  # report what ran so far
        STOP.set()
        for proc in list(WORKERS):
            proc.kill()
        for t in threads:
            t.join()
        print("interrupted: the summary covers the samples run so far")
    records.sort(key=lambda r: (r["idx"], r.get("k", 0)))
    s = summarize(records, walked, excluded)
    for line in s["failing"]:
        print("FAIL", line)
    print("\ntop mismatch causes:")
    for cause, n in s["top_causes"]:
        print(f"  {n:5d}  {cause}")
    print("most frequent fallbacks (samples):",
          ", ".join(f"{k} {n}" for k, n in s["top_fallbacks"][:15]))
    print(f"\nops: {s['ops_walked']} walked ({s['ops_excluded']} excluded), {s['ops_covered']} "
          f"covered (no fallback), {s['ops_passing']} of them pass every sample, "
          f"{s['ops_partly_covered']} partly covered")
    print("samples: " + ", ".join(f"{k} {n}" for k, n in s["samples"].items()) +
          f"  ({time.monotonic() - t0:.0f} s)")
    if opts.json:
        opts.json.write_text(json.dumps(dict(summary=s, excluded=excluded, records=records),
                                        indent=1))
    if opts.update_expected:
        write_expected(records)
        print(f"wrote {EXPECTED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
