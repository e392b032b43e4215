"""What the differential fuzzers (test_fuzz_views.py, test_fuzz_fusion.py) share: running a
step on both devices, and the Hypothesis test that runs random programs."""
import os

from hypothesis import HealthCheck, event, given, note, seed, settings
from hypothesis import strategies as st

import loom

EXAMPLES_ENV = "LOOM_FUZZ_EXAMPLES"
SEED = os.environ.get("LOOM_FUZZ_SEED") or None  # other programs than the default


class Mismatch(AssertionError):
    pass


def check_layout(got, want, what):
    """got (Loom) has want's (CPU) dtype, sizes, strides and storage offset."""
    for attr in ("dtype", "shape"):
        if getattr(got, attr) != getattr(want, attr):
            raise Mismatch(f"{what}: {attr} {getattr(got, attr)} != {getattr(want, attr)}")
    if got.stride() != want.stride() or got.storage_offset() != want.storage_offset():
        raise Mismatch(f"{what}: layout {got.stride()}+{got.storage_offset()} != "
                       f"{want.stride()}+{want.storage_offset()}")


def on_both(text, cpu_call, loom_call):
    """(want, got) from the step on the CPU and on Loom; None when both raise the same
    exception type. A step that raises on one device only is a Mismatch."""
    try:
        want = cpu_call()
    except Exception as e:  # noqa: BLE001
        note(f"{text}  # raises {type(e).__name__}")
        try:
            loom_call()
        except type(e):
            event(f"both raised {type(e).__name__}")
            return None
        except Exception as got:  # noqa: BLE001
            raise Mismatch(f"CPU raised {e!r}, Loom raised {got!r}") from got
        raise Mismatch(f"CPU raised {e!r}; Loom did not")
    try:
        got = loom_call()
    except Exception as e:  # noqa: BLE001
        note(f"{text}  # Loom raises")
        raise Mismatch(f"Loom raised {e!r}; CPU did not") from e
    return want, got


def fuzz_test(run_program, default_examples):
    """The test running `run_program(data)` on random programs: LOOM_FUZZ_EXAMPLES of them
    (derandomized, so that their kernels hit the disk cache next time), LOOM_FUZZ_SEED
    drawing others. No step may fall back to the CPU."""
    examples = int(os.environ.get(EXAMPLES_ENV, str(default_examples)))

    @settings(max_examples=examples, deadline=None, derandomize=SEED is None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(st.data())
    def test(data):
        loom.reset_metrics()
        run_program(data)
        fallbacks = loom.metrics()["fallbacks"]
        assert fallbacks == {}, f"fell back to CPU: {fallbacks}"

    return seed(int(SEED))(test) if SEED is not None else test
