"""Setitem loops and chains of small writes: values against CPU, and the kernel counts the
batching of stores promises (NOTE [Batched stores] in schedule/realize.cpp)."""
import pytest
import torch

import loom

D = loom.device


def both(program):
    """Runs program(device) on CPU and on Loom; returns the Loom kernels it took."""
    want = program("cpu")
    loom.sync()
    loom.reset_metrics()
    got = program(D)
    got_cpu = [t.cpu() for t in got]
    for w, g in zip(want, got_cpu):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
    assert loom.metrics()["fallbacks"] == {}
    return loom.metrics()["kernels_run"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32,
                                   torch.int8, torch.uint8, torch.bool, torch.float16,
                                   torch.bfloat16])
@pytest.mark.parametrize("realized", [True, False])
def test_scalar_setitem_loop_is_one_kernel(dtype, realized):
    def program(dev):
        t = torch.zeros(64, 3, dtype=dtype, device=dev)
        if realized and dev != "cpu":
            loom.sync()
            loom.reset_metrics()
        for i in range(50):
            t[i] = i % 2 if dtype == torch.bool else i % 7
        return [t]

    assert both(program) == 1


def test_loop_reuses_the_compiled_kernel():
    t = torch.zeros(100, device=D)
    loom.sync()
    for i in range(100):
        t[i] = float(i)
    t.cpu()
    loom.reset_metrics()
    for i in range(100):
        t[99 - i] = float(2 * i)
    assert t.cpu().tolist() == [float(2 * (99 - i)) for i in range(100)]
    m = loom.metrics()
    assert m["kernels_run"] == 1
    assert m["kernels_compiled"] == 0


def test_accumulating_loop():
    def program(dev):
        b = torch.zeros(8, dtype=torch.int64, device=dev)
        for i in range(200):
            b[i % 8] += 1
        return [b]

    assert both(program) == 1


def test_rows_from_another_tensor():
    def program(dev):
        src = torch.arange(30.0, device=dev).view(10, 3)
        if dev != "cpu":
            loom.sync()
            loom.reset_metrics()
        t = torch.empty(10, 3, device=dev)
        for i in range(10):
            t[i] = src[9 - i] * 2
        return [t]

    assert both(program) == 1


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_rows_from_a_pending_arange_batch(dtype):
    idx = torch.randint(0, 20, (300,), generator=torch.Generator().manual_seed(3)).tolist()

    def program(dev):
        src = torch.arange(900, dtype=dtype, device=dev).view(300, 3) * 2
        t = torch.zeros(20, 3, dtype=dtype, device=dev)
        for i in range(300):
            t[idx[i]] += src[i]
        return [t]

    assert both(program) == 1


def rand_loop(realize, seed=1, normal=False, fresh=False):
    """A histogram-like loop over random weights (a pending or a realized tensor, or one
    fresh draw per store); returns the result and the kernels it ran."""
    idx = torch.randint(0, 50, (500,), generator=torch.Generator().manual_seed(3)).tolist()
    torch.manual_seed(seed)
    draw = torch.randn if normal else torch.rand
    e = torch.zeros(50, device=D)
    w = draw(500, 2, device=D) * 1e3
    if realize:
        loom.sync()
    loom.reset_metrics()
    for i in range(500):
        e[idx[i]] += draw((), device=D) if fresh else w[i, 1]
    out = e.cpu()
    return out, loom.metrics()["kernels_run"]


@pytest.mark.parametrize("normal", [False, True])
def test_loop_over_pending_random_values_is_one_kernel(normal):
    # NOTE [Batched stores]: the random stream's seed and offset are slots of each row.
    want, _ = rand_loop(True, normal=normal)
    got, kernels = rand_loop(False, normal=normal)
    assert kernels == 1
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    loom.reset_metrics()
    other, kernels = rand_loop(False, seed=2, normal=normal)
    assert kernels == 1 and loom.metrics()["kernels_compiled"] == 0
    assert not torch.equal(other, got)


def test_loop_of_fresh_draws_is_one_kernel():
    torch.manual_seed(5)
    draws = [torch.rand((), device=D).item() for _ in range(2)]
    torch.manual_seed(5)
    e = torch.zeros(2, device=D)
    loom.sync()
    loom.reset_metrics()
    for i in range(2):
        e[i] = torch.rand((), device=D)
    assert e.tolist() == draws
    assert loom.metrics()["kernels_run"] == 1
    got, kernels = rand_loop(False, fresh=True)
    assert kernels == 1
    assert got.min() >= 0 and got.max() < 500


def test_prefix_sum_loop_reads_earlier_writes():
    def program(dev):
        x = torch.arange(1.0, 21.0, device=dev)
        for i in range(1, 20):
            x[i] = x[i - 1] + x[i]
        return [x]

    assert both(program) == 1


def test_a_reader_between_writes_sees_its_state():
    def program(dev):
        x = torch.zeros(6, device=dev)
        snaps = []
        for i in range(6):
            x[i] = i + 1
            if i in (1, 3):
                snaps.append(x * 1)
        return [x] + snaps

    both(program)


def test_aliases_see_batched_writes():
    def program(dev):
        x = torch.zeros(4, 4, device=dev)
        col = x[:, 1]
        t = x.t()
        for i in range(4):
            x[i, i] = i + 1
            x[i, (i + 1) % 4] = -i
        return [x, col, t, t[2:]]

    assert both(program) == 1


def test_mixed_writes_stay_ordered():
    def program(dev):
        x = torch.ones(5, 4, dtype=torch.float16, device=dev)
        for i in range(5):
            x[i] = i * 0.1
        x[1:3] = 7
        for i in range(5):
            x[i] *= 3
        x[:, 0] = x[:, 1] + 1
        return [x]

    both(program)


def test_in_place_on_realized_slice_is_one_kernel():
    a = torch.arange(10.0, device=D)
    loom.sync()
    loom.reset_metrics()
    a[1:].mul_(2)
    assert a.tolist() == [0.0] + [2.0 * i for i in range(1, 10)]
    assert loom.metrics()["kernels_run"] == 1


def test_long_chain_does_not_recurse():
    b = torch.zeros(8, device=D)
    for i in range(20000):
        b[i % 8] += 1
    assert b.tolist() == [2500.0] * 8


def test_writes_through_views_batch():
    def program(dev):
        x = torch.zeros(6, 6, device=dev)
        v = x[1:, ::2]
        for i in range(5):
            v[i] = float(i)
        return [x, v]

    assert both(program) == 1


def test_in_place_op_reuses_memory_when_no_reader_remains():
    x = torch.arange(4096.0, device=D)
    loom.sync()
    loom.reset_metrics()
    x.add_(1)
    x[10:20].mul_(2)
    loom.sync()
    m = loom.metrics()
    assert m["buffers_allocated"] == 0
    assert m["kernels_run"] == 2
    y = x * 1  # a reader of the old value: the next write must not clobber it
    x.add_(1)
    assert y[0].item() == 1.0 and x[0].item() == 2.0
