import os

import pytest
import torch  # noqa: F401  (before loom, which links against torch)

# Every kernel run from a plan is lowered again and compared (NOTE [Kernel plans]).
os.environ.setdefault("LOOM_CHECK_PLANS", "1")

import loom


@pytest.fixture
def fresh_metrics():
    """Zeroes loom.metrics() before the test and returns the metrics function."""
    loom.reset_metrics()
    return loom.metrics


@pytest.fixture
def dev():
    return loom.device
