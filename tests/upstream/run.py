#!/usr/bin/python3
"""Runs PyTorch's own device-generic test files (FILES: views, indexing, type promotion, shape
ops, sorting, reductions, tensor creation, scatter/gather, segment reductions, complex,
binary ufuncs, foreach, and test_torch's device-generic classes) on Loom.

The files come from `apt-get source pytorch` (fetch.sh, cached outside the repo). PyTorch's
device-generic tests are instantiated for Loom only (python/loom/testing.py), with CPU
fallbacks turned into errors. Results are compared with expected_failures.txt: a failure
not listed there fails the run, a listed test that passes is reported.

Each file runs in a pytest process of its own; a test that hangs past --test-timeout or
crashes ends that process, is counted as failed, and a new process runs the rest.

  tests/upstream/run.py                      # every file in FILES
  tests/upstream/run.py --quick              # all but SLOW_FILES (make test)
  tests/upstream/run.py test_indexing.py -k bool
  tests/upstream/run.py --update-expected    # rewrite expected_failures.txt from this run
"""
import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FILES = ("test_view_ops.py", "test_indexing.py", "test_type_promotion.py", "test_shape_ops.py",
         "test_sort_and_select.py", "test_reductions.py", "test_tensor_creation_ops.py",
         "test_scatter_gather_ops.py", "test_segment_reductions.py", "test_complex.py",
         "test_binary_ufuncs.py", "test_foreach.py", "test_torch.py")
# `make test` runs these (--quick); test_binary_ufuncs (7300 tests), test_foreach and
# test_torch take 6, 7 and 30 minutes with a cold kernel cache, so they run in
# `make test-upstream` only.
SLOW_FILES = ("test_binary_ufuncs.py", "test_foreach.py", "test_torch.py")
QUICK_FILES = tuple(f for f in FILES if f not in SLOW_FILES)
# Only the device-generic classes of a file that also holds CPU-only ones.
FILE_SELECT = {"test_torch.py": "PRIVATEUSEONE"}
EXPECTED = HERE / "expected_failures.txt"

HEADER = """\
# PyTorch's own tests (run by tests/upstream/run.py) that fail on Loom today: one pytest
# node id per line, then `# reason`. A failure not listed here fails `make test-upstream`;
# a listed test that passes is reported. `tests/upstream/run.py --update-expected`
# rewrites this file from a run, keeping the reasons written here.
"""

# Reasons for failures new to the list, from the failure's first line; first match wins.
REASONS = [
    (r"Loom has no kernel for (\S+)", r"no Loom kernel for \1 (CPU fallback is an error)"),
    (r"ran CPU fallbacks .*?: (.*)", r"a CPU fallback raised and the test caught it: \1"),
    (r"QuantizedPrivateUse1", "quantized tensors are not supported on Loom"),
    (r"Invalid device for storage: privateuseone",
     "torch 1.13's Python binding takes no PrivateUse1 storage (Tensor.set_(storage, ...))"),
]


def derive_reason(line):
    for pattern, reason in REASONS:
        m = re.search(pattern, line)
        if m:
            return m.expand(reason)
    return line


def read_expected(path):
    expected = {}
    if path.exists():
        for line in path.read_text().splitlines():
            test_id, _, reason = line.partition("#")
            if test_id.strip():
                expected[test_id.strip()] = reason.strip()
    return expected


def write_expected(path, expected):
    groups = collections.defaultdict(list)
    for test_id, reason in expected.items():
        groups[reason].append(test_id)
    lines = [HEADER.rstrip("\n")]
    for reason in sorted(groups, key=lambda r: (-len(groups[r]), r)):
        lines.append("")
        lines += [f"{test_id}  # {reason}" for test_id in sorted(groups[reason])]
    path.write_text("\n".join(lines) + "\n")


def read_records(path):
    collected, started, outcomes = None, [], {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if "collected" in r:
                collected = collected if collected is not None else r["collected"]
            elif "start" in r:
                started.append((r["start"], r["time"]))
            else:
                outcomes[r["id"]] = (r["outcome"], r["reason"])
    return collected, started, outcomes


def run_file(test_dir, name, env, opts):
    """Runs one file until every collected test has an outcome; returns (collected, outcomes)."""
    stem = Path(name).stem
    results, done, log, stacks = (opts.log_dir / f"{stem}.{ext}"
                                  for ext in ("jsonl", "done", "log", "stacks"))
    for p in (results, done, log, stacks):
        p.write_text("")
    env = dict(env, LOOM_UPSTREAM_RESULTS=str(results), LOOM_UPSTREAM_DONE=str(done),
               LOOM_UPSTREAM_TIMEOUT=str(opts.test_timeout), LOOM_UPSTREAM_STACKS=str(stacks))
    cmd = [sys.executable, "-m", "pytest", "-q", "-rN", "-p", "no:cacheprovider",
           "-p", "loom_pytest_plugin", "-c", os.devnull, "--rootdir", str(test_dir), name]
    select = [f"({k})" for k in (FILE_SELECT.get(name), opts.k) if k]
    if select:
        cmd += ["-k", " and ".join(select)]
    deadline = time.monotonic() + opts.file_timeout
    lost = {}  # tests whose process died under them
    while True:
        _, _, outcomes = read_records(results)
        done.write_text("".join(t + "\n" for t in list(outcomes) + list(lost)))
        with open(log, "a") as out:
            proc = subprocess.Popen(cmd, cwd=test_dir, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                rc = None
        collected, started, outcomes = read_records(results)
        outcomes.update(lost)
        if collected is None:
            sys.stdout.write(log.read_text()[-3000:])
            raise SystemExit(f"{name}: pytest collected nothing (exit {rc}); log in {log}")
        unfinished = [(t, t0) for t, t0 in started if t not in outcomes]
        for test_id, t0 in unfinished:
            if rc is None:
                why = f"not finished when the file's {opts.file_timeout} s ran out"
            elif rc < 0:
                why = f"crashed the test process ({signal.Signals(-rc).name})"
            elif time.time() - t0 >= opts.test_timeout - 1:
                why = f"hung: over the {opts.test_timeout} s per-test timeout"
            else:
                why = f"the test process exited with status {rc} during the test"
            lost[test_id] = outcomes[test_id] = ("failed", why)
        remaining = [t for t in collected if t not in outcomes]
        if not remaining:
            return collected, outcomes
        if rc is None or not unfinished:
            why = "not run: " + ("the file's time ran out" if rc is None
                                 else f"pytest exited with status {rc} before them")
            outcomes.update((t, ("failed", why)) for t in remaining)
            return collected, outcomes
        print(f"  {name}: {unfinished[-1][0]} {outcomes[unfinished[-1][0]][1]} (stacks in "
              f"{stacks}, output in {log}); continuing with {len(remaining)} tests", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="upstream test files (default: FILES)")
    ap.add_argument("--quick", action="store_true", help="QUICK_FILES instead of FILES")
    ap.add_argument("-k", help="pytest -k expression (a subset of the tests)")
    ap.add_argument("--update-expected", action="store_true",
                    help="rewrite expected_failures.txt from this run's failures")
    ap.add_argument("--expected", type=Path, default=EXPECTED)
    ap.add_argument("--test-timeout", type=int, default=900,
                    help="seconds per test before it counts as hung (a test that makes hundreds "
                    "of shapes compiles kernels for each: minutes with a cold cache)")
    ap.add_argument("--file-timeout", type=int, default=3600, help="seconds per file")
    ap.add_argument("--fallback", choices=("error", "warn", "allow"), default="error",
                    help="LOOM_FALLBACK for the tests; allow shows what fails besides "
                    "missing kernels (not comparable with the expected list)")
    ap.add_argument("--log-dir", type=Path, default=Path(f"/tmp/loom-upstream-{os.getuid()}"))
    opts = ap.parse_args()
    if not opts.files:
        opts.files = list(QUICK_FILES if opts.quick else FILES)

    test_dir = Path(subprocess.run([str(HERE / "fetch.sh")], check=True, text=True,
                                   stdout=subprocess.PIPE).stdout.strip())
    opts.log_dir = opts.log_dir.resolve()
    opts.log_dir.mkdir(parents=True, exist_ok=True)

    sys.path.insert(0, str(REPO / "python"))
    import torch  # noqa: F401  (before loom)

    import loom
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "python"), str(HERE),
                                                        os.environ.get("PYTHONPATH")])),
               TORCH_TEST_DEVICES=str(REPO / "python" / "loom" / "testing.py"),
               PYTORCH_TESTING_DEVICE_ONLY_FOR=loom.device.type,
               LOOM_FALLBACK=opts.fallback)

    expected = read_expected(opts.expected)
    collected, outcomes = [], {}
    t_all = time.monotonic()
    for name in opts.files:
        t0 = time.monotonic()
        ids, res = run_file(test_dir, name, env, opts)
        collected += ids
        outcomes.update(res)
        c = collections.Counter(o for o, _ in res.values())
        print(f"{name}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped "
              f"in {time.monotonic() - t0:.0f} s", flush=True)

    failed = {t: why for t, (o, why) in outcomes.items() if o == "failed"}
    unexpected = sorted(t for t in failed if t not in expected)
    now_pass = sorted(t for t in expected if outcomes.get(t, ("",))[0] == "passed")
    stale = sorted(t for t in expected if t in outcomes and outcomes[t][0] == "skipped")
    c = collections.Counter(o for o, _ in outcomes.values())
    ran = c["passed"] + c["failed"]

    for t in unexpected:
        print(f"UNEXPECTED FAILURE {t}  # {failed[t]}")
    for t in now_pass:
        print(f"unexpected pass {t}  (remove it from {opts.expected.name})")
    for t in stale:
        print(f"skipped but listed as failing: {t}")
    print(f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped "
          f"in {time.monotonic() - t_all:.0f} s; "
          f"{100 * c['passed'] / max(1, len(outcomes)):.2f}% of {len(outcomes)} instantiated "
          f"tests pass ({100 * c['passed'] / max(1, ran):.2f}% of the {ran} not skipped); "
          f"{len(failed) - len(unexpected)} expected failures, {len(unexpected)} unexpected, "
          f"{len(now_pass)} unexpected passes")
    print(f"logs: {opts.log_dir}")

    if opts.update_expected:
        kept = {t: r for t, r in expected.items() if t not in outcomes}  # not run this time
        kept.update((t, expected.get(t) or derive_reason(why)) for t, why in failed.items())
        write_expected(opts.expected, kept)
        print(f"wrote {len(kept)} expected failures to {opts.expected}")
        return 0
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
