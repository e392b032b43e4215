"""The default subset of the OpInfo sweep (opinfo_sweep.py): one test per op of PyTorch's
op_db, its first sample in the first of float32/float64/int64/bool it supports, forward and
(for ops with autograd) backward, on Loom against the CPU.

An op that needs a CPU fallback or disagrees with the CPU is listed in opinfo_expected.txt
with its reason and is a strict xfail; ops that the sweep excludes (FFTs, LAPACK, sparse)
are not collected. `make test-opinfo` runs every sample.
"""
import pytest

import opinfo_sweep as sweep

OPS = [op for op in sweep.load_ops() if sweep.exclusion_reason(op) is None]
EXPECTED = sweep.read_expected()


def _param(op):
    oid = sweep.op_id(op)
    marks = [pytest.mark.xfail(reason=EXPECTED[oid], strict=True)] if oid in EXPECTED else []
    return pytest.param(op, id=oid, marks=marks)


@pytest.mark.parametrize("op", [_param(op) for op in OPS])
def test_first_sample(op):
    rec = sweep.first_sample_record(op)
    where = f"{rec.get('dtype', '')} sample {rec.get('sample', 0)} {rec.get('kind', '')}"
    assert rec["status"] != "fallback", f"not covered ({where}): no Loom kernel for {rec['detail']}"
    assert rec["status"] == "pass", f"{where}: {rec['detail']}"


def test_expected_list_names_real_ops():
    ids = {sweep.op_id(op) for op in OPS}
    stale = sorted(set(EXPECTED) - ids)
    assert not stale, f"opinfo_expected.txt names ops the subset does not run: {stale}"
