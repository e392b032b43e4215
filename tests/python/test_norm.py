"""layer_norm and batch_norm forward/backward (and running statistics) against CPU."""
import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def sample(shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * 2 + 0.5).to(dtype)


def check(fn, *inputs, tol=1e-4, wrt=(0,)):
    outs = []
    for dev in ("cpu", D):
        xs = [t.detach().to(dev).requires_grad_(i in wrt) if isinstance(t, torch.Tensor) else t
              for i, t in enumerate(inputs)]
        loom.reset_metrics()
        y = fn(*xs)
        (y * sample(tuple(y.shape), 99).to(dev)).sum().backward()
        outs.append([y.detach().cpu()] + [xs[i].grad.cpu() for i in wrt])
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
    for want, got in zip(*outs):
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,normalized", [((4, 8), (8,)), ((2, 3, 6), (6,)), ((2, 3, 4, 5), (4, 5))])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(shape, normalized, affine):
    w = sample(normalized, 1) if affine else None
    b = sample(normalized, 2) if affine else None
    check(lambda x, w, b: F.layer_norm(x, normalized, w, b), sample(shape, 3), w, b,
          wrt=(0, 1, 2) if affine else (0,))


def test_layer_norm_transposed_input():
    check(lambda x: F.layer_norm(x.t(), (4,)), sample((4, 6), 4))


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (4, 3, 5, 6)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(shape, affine):
    c = shape[1]
    w = sample((c,), 5) if affine else None
    b = sample((c,), 6) if affine else None
    rm = {dev: torch.zeros(c, device=dev) for dev in ("cpu", D)}
    rv = {dev: torch.ones(c, device=dev) for dev in ("cpu", D)}

    def fn(x, w, b):
        dev = "cpu" if x.device.type == "cpu" else D
        return F.batch_norm(x, rm[dev], rv[dev], w, b, training=True, momentum=0.2)

    check(fn, sample(shape, 7), w, b, wrt=(0, 1, 2) if affine else (0,))
    torch.testing.assert_close(rm[D].cpu(), rm["cpu"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rv[D].cpu(), rv["cpu"], rtol=1e-5, atol=1e-5)


def test_batch_norm_eval():
    rm, rv = sample((3,), 8), sample((3,), 9).abs() + 0.5
    check(lambda x, w, b: F.batch_norm(x, rm.to(x.device), rv.to(x.device), w, b, training=False),
          sample((4, 3, 5), 10), sample((3,), 11), sample((3,), 12), wrt=(0, 1, 2))


def test_batch_norm_module_trains():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                              torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 5 * 5, 3))
    x, y = sample((6, 3, 5, 5), 13), torch.tensor([0, 1, 2, 0, 1, 2])
    state, losses = {k: v.clone() for k, v in net.state_dict().items()}, {}
    for dev in ("cpu", D):
        net.load_state_dict(state)
        m = net.to(dev)
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, nesterov=True, foreach=True)
        out = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(m(x.to(dev)), y.to(dev), label_smoothing=0.2)
            loss.backward()
            opt.step()
            out.append(loss.item())
        m.eval()
        out.append(F.cross_entropy(m(x.to(dev)), y.to(dev)).item())
        m.train()
        losses[dev] = out
        net = net.cpu()
    torch.testing.assert_close(torch.tensor(losses[D]), torch.tensor(losses["cpu"]), rtol=1e-4, atol=1e-4)


def test_layer_norm_gelu_kernels(fresh_metrics):
    x = torch.randn(64, 256).to(loom.device)
    w = torch.randn(256).to(loom.device)
    b = torch.randn(256).to(loom.device)
    loom.sync()
    loom.reset_metrics()
    y = F.gelu(F.layer_norm(x, (256,), w, b))
    y.cpu()
    m = loom.metrics()
    assert m["fallbacks"] == {}
    # mean and variance hoisted out of each row's loop, normalisation, affine and GELU
    assert m["kernels_run"] == 1


@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4), 2), ((2, 4, 7), 4), ((1, 6, 2, 3, 2), 1),
                                          ((2, 3, 1, 1), 3)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(shape, groups, affine):
    c = shape[1]
    w = sample((c,), 7) if affine else None
    b = sample((c,), 8) if affine else None
    check(lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-4), sample(shape, 9), w, b,
          wrt=(0, 1, 2) if affine else (0,))


def test_group_norm_strided_and_dtypes():
    x = sample((6, 4, 5, 2), 10)
    w, b = sample((4,), 11), sample((4,), 12)
    check(lambda x, w, b: F.group_norm(x.transpose(0, 2)[:, :, ::2], 2, w, b), x, w, b, wrt=(0, 1, 2))
    check(lambda x: F.group_norm(x.contiguous(memory_format=torch.channels_last), 2), x)
    check(lambda x, w, b: F.group_norm(x, 2, w, b), sample((2, 4, 3, 3), 13, torch.float64),
          sample((4,), 14, torch.float64), sample((4,), 15, torch.float64), wrt=(0, 1, 2), tol=1e-10)


def test_group_norm_statistics_and_errors():
    x = sample((2, 6, 3), 16)
    got = torch.native_group_norm(x.to(D), None, None, 2, 6, 3, 3, 1e-5)
    want = torch.native_group_norm(x, None, None, 2, 6, 3, 3, 1e-5)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g.cpu(), w, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x.to(D), 4)


def test_batch_norm_statistics_computed_once_for_two_readers():
    """Two kernels read a batch norm's output (a pooling and a sum): its mean and inverse
    deviation are computed once (one kernel each) and the output, elementwise on them,
    fuses into both readers instead of being stored (it was: 6 kernels)."""
    g = torch.Generator().manual_seed(3)
    x, w, b = torch.randn(4, 8, 16, 16, generator=g), torch.randn(8, generator=g), torch.randn(8, generator=g)
    outs = []
    for dev in ("cpu", D):
        xs, ws, bs = x.to(dev), w.to(dev), b.to(dev)
        loom.sync()
        loom.reset_metrics()
        r = F.relu(F.batch_norm(xs, None, None, ws, bs, training=True))
        z1, z2 = F.max_pool2d(r, 2), r.sum((2, 3))
        del r
        loom.sync()
        if dev != "cpu":
            assert loom.metrics()["kernels_run"] == 4
        outs.append((z1.cpu(), z2.cpu()))
    for want, got in zip(*outs):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("held", [True, False])
def test_a_wide_residual_is_stored_once_for_its_readers(held):
    """NOTE [Live state]: a value that reads five arrays (a residual stream), read by a
    layer norm and by another kernel, is stored once (3 kernels) instead of being computed
    again inside both readers, whether or not Python still holds it. Read by one kernel,
    it fuses into it unless Python holds it (a later reader would compute it again)."""
    g = torch.Generator().manual_seed(5)
    parts = [torch.randn(32, 128, generator=g) for _ in range(5)]
    for readers, kernels in ((2, 3), (1, 2 if held else 1)):
        outs = []
        for dev in ("cpu", D):
            ps = [p.to(dev) for p in parts]
            loom.sync()
            loom.reset_metrics()
            x = ps[0] + ps[1] + ps[2] + ps[3] + ps[4]
            got = [F.layer_norm(x, (128,))]
            if readers == 2:
                got.append(x * 2)
            if not held:
                del x
            loom.sync()
            if dev != "cpu":
                assert loom.metrics()["kernels_run"] == kernels
            outs.append([t.cpu() for t in got])
        for want, have in zip(*outs):
            torch.testing.assert_close(have, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_of_one_element_without_gradients(dtype):
    # No loops at all: the variance, its mean and the output's mean are emitted where the
    # output needs them, and a joint loop once declared the output's mean twice.
    x, w, b = (torch.tensor([v], dtype=dtype) for v in (5.2478, 2.0, -6.1891))
    want = torch.nn.functional.layer_norm(x, (1,), w, b)
    got = torch.nn.functional.layer_norm(x.to(loom.device), (1,), w.to(loom.device), b.to(loom.device))
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=1e-6)


def test_layer_norm_of_one_element_rounds_as_the_cpu():
    # The variance is 0, so rstd = 1/sqrt(eps) is large and x * rstd - rstd * mean cancels:
    # what is left is the CPU's rounding, which Loom reproduces by forming it the same way.
    x, w, b = torch.tensor([4.6711521149]), torch.tensor([-1.8878135681]), torch.tensor([3.9577922821])
    ts = [t.clone().requires_grad_() for t in (x, w, b)]
    want = torch.nn.functional.layer_norm(ts[0], (1,), ts[1], ts[2])
    ls = [t.to(loom.device).requires_grad_() for t in (x, w, b)]
    got = torch.nn.functional.layer_norm(ls[0], (1,), ls[1], ls[2])
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=0, atol=1e-6)
    want.backward(torch.ones(1))
    got.backward(torch.ones(1, device=loom.device))
    torch.testing.assert_close(ls[1].grad.cpu(), ts[1].grad, rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_native_layer_norm_layouts_match_cpu(dtype):
    x = sample((3, 4, 5), 8, dtype)
    w, b = sample((4, 5), 9, dtype), sample((4, 5), 10, dtype)
    for args in [(x, (5,), None, None), (x, (4, 5), w, b), (x.transpose(0, 2), (3,), None, None)]:
        want = torch.native_layer_norm(*args, 1e-5)
        got = torch.native_layer_norm(*[a.to(D) if isinstance(a, torch.Tensor) else a
                                        for a in args], 1e-5)
        # bfloat16: the CPU rounds intermediates to bfloat16, Loom computes in float and
        # rounds once; its values must be no farther from float64's than the CPU's.
        ref = torch.native_layer_norm(*[a.double() if isinstance(a, torch.Tensor) else a
                                        for a in args], 1e-5)
        for w_, g, r in zip(want, got, ref):
            assert (g.dtype, g.shape, g.stride()) == (w_.dtype, w_.shape, w_.stride())
            if dtype == torch.bfloat16:
                err = (g.cpu().double() - r).abs().max()
                assert err <= (w_.double() - r).abs().max() + 1e-3
            else:
                torch.testing.assert_close(g.cpu(), w_, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("param_dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_layer_norm_of_mixed_dtypes_as_cpu(dtype, param_dtype):
    # torch 2.x takes a reduced-float input with float parameters (statistics in float);
    # 1.13 refuses it, and 2.x any other pair: the same error, or the same dtypes and values.
    x = sample((3, 4, 5), 8, dtype)
    w, b = sample((5,), 9, param_dtype), sample((5,), 10, param_dtype)
    try:
        want = torch.native_layer_norm(x, (5,), w, b, 1e-5)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            torch.native_layer_norm(x.to(D), (5,), w.to(D), b.to(D), 1e-5)
        assert str(got.value) == str(e)
        return
    got = torch.native_layer_norm(x.to(D), (5,), w.to(D), b.to(D), 1e-5)
    for g, w_ in zip(got, want):
        assert (g.dtype, g.shape, g.stride()) == (w_.dtype, w_.shape, w_.stride())
        torch.testing.assert_close(g.cpu(), w_, rtol=1e-2, atol=1e-2)


LAYER_NORM_ERRORS = [
    lambda x: F.layer_norm(x, (4,)),                                 # trailing dims differ
    lambda x: F.layer_norm(x, (3, 4, 5, 6)),                         # more dims than input
    lambda x: F.layer_norm(x, (5,), torch.ones(4, device=x.device)),  # weight's shape
    lambda x: F.layer_norm(x, (5,), None, torch.ones(2, 5, device=x.device)),  # bias's
    lambda x: torch.native_layer_norm(x, [], None, None, 1e-5),      # nothing normalized
]


@pytest.mark.parametrize("i", range(len(LAYER_NORM_ERRORS)))
def test_layer_norm_errors_match_cpu(i):
    from cpu_errors import raises_like_cpu
    x = sample((3, 4, 5), 11)
    raises_like_cpu(lambda: LAYER_NORM_ERRORS[i](x), lambda: LAYER_NORM_ERRORS[i](x.to(D)))
