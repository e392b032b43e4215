import pytest
import torch  # noqa: F401  (before loom, which links against torch)

import loom


@pytest.fixture
def fresh_metrics():
    """Zeroes loom.metrics() before the test and returns the metrics function."""
    loom.reset_metrics()
    return loom.metrics


@pytest.fixture
def dev():
    return loom.device
