"""pytest plugin for run.py: one JSON line per test, a watchdog per test, fallback checks.

Loaded with ``-p loom_pytest_plugin``; configured by the environment:
  LOOM_UPSTREAM_RESULTS  file to append JSON lines to ({"collected"}, {"start"}, {"id"})
  LOOM_UPSTREAM_DONE     file of node ids to deselect (already run by an earlier process)
  LOOM_UPSTREAM_TIMEOUT  seconds a test may take before the process is ended
  LOOM_UPSTREAM_STACKS   file the watchdog writes every thread's stack to before it does
"""
import faulthandler
import json
import os
import re
import time

import pytest
import torch  # noqa: F401  (before loom)

import loom

_results = None
_stacks = None
_LOOM_ERROR = re.compile(r"Loom has no kernel for|Loom does not support")
_outcome_key = pytest.StashKey[dict]()  # {"outcome", "reason"} of the running test
_fallback_key = pytest.StashKey[dict]()  # fallback counts when the test started


def _emit(record):
    _results.write(json.dumps(record) + "\n")
    _results.flush()


def _fallbacks():
    return dict(loom.metrics()["fallbacks"])


def pytest_configure(config):
    global _results, _stacks
    _results = open(os.environ["LOOM_UPSTREAM_RESULTS"], "a")
    # Not sys.stderr: pytest captures it into a file that is lost when the process ends.
    _stacks = open(os.environ.get("LOOM_UPSTREAM_STACKS", os.devnull), "a")


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(session, config, items):
    _emit({"collected": [item.nodeid for item in items]})
    path = os.environ.get("LOOM_UPSTREAM_DONE")
    done = set()
    if path and os.path.exists(path):
        with open(path) as f:
            done = {line.strip() for line in f if line.strip()}
    if done:
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in done])
        items[:] = [i for i in items if i.nodeid not in done]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _emit({"start": item.nodeid, "time": time.time()})
    item.stash[_outcome_key] = {"outcome": "passed", "reason": ""}
    # A hang in C++ holds no Python lock that a signal could break into; faulthandler's
    # watchdog thread dumps the stacks and ends the process, and run.py starts another.
    faulthandler.dump_traceback_later(float(os.environ.get("LOOM_UPSTREAM_TIMEOUT", "300")),
                                      exit=True, file=_stacks)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
    _emit(dict(id=item.nodeid, **item.stash[_outcome_key]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    if call.when == "setup":
        item.stash[_fallback_key] = _fallbacks()
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and report.passed and os.environ.get("LOOM_FALLBACK") == "error":
        # NotImplementedError is a RuntimeError: a test that expects a RuntimeError passes
        # when a missing kernel raises instead. A fallback inside a test is a failure.
        before = item.stash.get(_fallback_key, {})
        new = sorted(op for op, n in _fallbacks().items() if n > before.get(op, 0))
        if new:
            report.outcome = "failed"
            report.longrepr = ("passed, but ran CPU fallbacks (raised under LOOM_FALLBACK="
                               f"error and caught by the test): {', '.join(new)}")
    state = item.stash[_outcome_key]
    if report.failed:
        if state["outcome"] != "failed":
            state["outcome"] = "failed"
            state["reason"] = _failure_line(report)
    # An upstream expectedFailure that fails (wasxfail) behaves as on the CPU: it passes.
    elif report.skipped and not hasattr(report, "wasxfail") and state["outcome"] == "passed":
        state["outcome"] = "skipped"
        state["reason"] = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) \
            else str(report.longrepr)


def _failure_line(report):
    """The line that says why: the first of Loom's own errors in the (possibly chained)
    traceback, as a later error (printing the tensor, say) can hide the first; or else
    the line the test failed with."""
    text = str(report.longrepr)
    for line in text.splitlines():
        if line.startswith("E ") and _LOOM_ERROR.search(line):  # an exception, not a local
            return line[1:].strip()[:300]
    crash = getattr(report.longrepr, "reprcrash", None)
    for line in (crash.message if crash is not None else text).splitlines():
        if line.strip():
            return line.strip()[:300]
    return "failed"
