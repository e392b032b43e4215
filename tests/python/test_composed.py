"""Ops that PyTorch dispatches to a CPU kernel although they compose other ops (ops_composed.cpp,
the deprecated _aminmax, foreach erfc/lgamma): on Loom without a fallback, against the CPU.
And a guard: every aten op with a CPU kernel has a Loom kernel, or is listed below with why."""
import re

import pytest
import torch

import loom

D = loom.device


@pytest.fixture(autouse=True)
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


def same(got, want, **kw):
    assert got.device.type == D.type and got.dtype == want.dtype
    assert got.shape == want.shape and got.stride() == want.stride()
    torch.testing.assert_close(got.cpu(), want, **kw)


def sample(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_channel_shuffle():
    x = sample(2, 6, 3, 4)
    for t in (x, x.contiguous(memory_format=torch.channels_last), x[:, :, ::2]):
        for groups in (1, 2, 3, 6):
            same(torch.channel_shuffle(t.to(D), groups), torch.channel_shuffle(t, groups))
    for bad in (lambda d: torch.channel_shuffle(x.to(d), 4), lambda d: torch.channel_shuffle(x.to(d), 0),
                lambda d: torch.channel_shuffle(sample(2, 6).to(d), 2)):
        with pytest.raises(RuntimeError) as want:
            bad("cpu")
        with pytest.raises(RuntimeError) as got:
            bad(D)
        assert str(got.value) == str(want.value)


def test_tensordot_mvlgamma_norm_out():
    a, b = sample(3, 4, 5, seed=1), sample(4, 5, 2, seed=2)
    for dims in (2, ([1, 2], [0, 1])):
        out = torch.empty(0, device=D)
        assert torch.tensordot(a.to(D), b.to(D), dims=dims, out=out) is out
        same(out, torch.tensordot(a, b, dims=dims), rtol=1e-5, atol=1e-5)
    x = sample(4, 3, seed=3).abs() + 2
    for p in (1, 3):
        out = torch.empty(0, device=D)
        torch.mvlgamma(x.to(D), p, out=out)
        same(out, torch.mvlgamma(x, p))
    from cpu_errors import outcome_like_cpu
    for out_dtype in (torch.float32, torch.float64):  # 2.x refuses an out unlike dtype=
        outcome_like_cpu(
            lambda: torch.norm(a, 3, [1], True, dtype=torch.float64,
                               out=torch.empty(0, dtype=out_dtype)),
            lambda: torch.norm(a.to(D), 3, [1], True, dtype=torch.float64,
                               out=torch.empty(0, dtype=out_dtype, device=D)))


def test_addmm_activation_out():
    bias, m1, m2 = sample(5, seed=4), sample(3, 4, seed=5), sample(4, 5, seed=6)
    for gelu in (False, True):
        want = torch.ops.aten._addmm_activation.out(bias, m1, m2, use_gelu=gelu, out=torch.empty(0))
        got = torch.ops.aten._addmm_activation.out(bias.to(D), m1.to(D), m2.to(D), use_gelu=gelu,
                                                   out=torch.empty(0, device=D))
        same(got, want, rtol=1e-5, atol=1e-5)


def test_native_dropout_and_bernoulli_out():
    x = sample(200, 300, seed=7)
    out, mask = torch.native_dropout(x.to(D), 0.25, True)
    assert out.dtype == torch.float32 and mask.dtype == torch.bool and mask.shape == x.shape
    m = mask.cpu()
    assert abs(m.double().mean().item() - 0.75) < 0.01
    torch.testing.assert_close(out.cpu(), torch.where(m, x / 0.75, torch.zeros(())))
    g = sample(200, 300, seed=8)
    torch.testing.assert_close(torch.ops.aten.native_dropout_backward(g.to(D), mask, 4 / 3).cpu(),
                               g * m * (4 / 3))
    out, mask = torch.native_dropout(x.to(D), 0.25, False)
    assert torch.equal(out.cpu(), x) and bool(mask.cpu().all())
    p = torch.rand(400, 500)
    out = torch.empty(0, device=D)
    assert torch.bernoulli(p.to(D), out=out) is out and out.shape == p.shape
    assert abs(out.cpu().mean().item() - p.mean().item()) < 0.01


def test_assert_async():
    torch._assert_async(torch.tensor(2.0, device=D))
    torch._assert_async((torch.ones(1, device=D) * 3).squeeze())
    for bad in (torch.tensor(0.0), torch.zeros(2)):
        with pytest.raises(RuntimeError) as want:
            torch._assert_async(bad)
        with pytest.raises(RuntimeError) as got:
            torch._assert_async(bad.to(D))
        assert str(got.value) == str(want.value)


@pytest.mark.filterwarnings("ignore:_aminmax is deprecated")
def test_deprecated_aminmax_and_foreach():
    x = sample(4, 6, seed=9)
    for got, want in ((torch._aminmax(x.to(D)), torch._aminmax(x)),
                      (torch._aminmax(x.to(D), 1, True), torch._aminmax(x, 1, True))):
        for g, w in zip(got, want):
            same(g, w)
    xs = [sample(3, seed=10), sample(2, 2, seed=11).abs() + 0.5]
    for op in ("erfc", "lgamma"):
        want = getattr(torch, "_foreach_" + op)(xs)
        got = getattr(torch, "_foreach_" + op)([t.to(D) for t in xs])
        for g, w in zip(got, want):
            same(g, w)
        ys = [t.to(D) for t in xs]
        getattr(torch, "_foreach_" + op + "_")(ys)
        for g, w in zip(ys, want):
            same(g, w)


def test_add_relu():
    # The CPU's add_clamp: [0, the largest value of self's dtype], NaN kept (its vector loop).
    a = torch.tensor([1.0, -2.0, float("nan"), 3.0, float("inf"), -float("inf")] * 8)
    b = torch.full((48,), 0.5)
    ops = torch.ops.aten
    for x, y in ((a, b), (a.double(), b), (torch.tensor([1, -2, 3] * 16), torch.tensor([1] * 48)),
                 (torch.tensor([100, -2, 3] * 16, dtype=torch.int8), torch.tensor([100] * 48, dtype=torch.int8))):
        for alpha in (1, 2):
            same(ops._add_relu.Tensor(x.to(D), y.to(D), alpha=alpha), ops._add_relu.Tensor(x, y, alpha=alpha),
                 equal_nan=True)
            same(ops._add_relu.Scalar(x.to(D), 3, alpha=alpha), ops._add_relu.Scalar(x, 3, alpha=alpha),
                 equal_nan=True)
            want, got = x.clone(), x.to(D)
            ops._add_relu_.Tensor(want, y, alpha=alpha), ops._add_relu_.Tensor(got, y.to(D), alpha=alpha)
            same(got, want, equal_nan=True)
            want = ops._add_relu.out(x, y, alpha=alpha, out=torch.empty(0, dtype=want.dtype))
            got = ops._add_relu.out(x.to(D), y.to(D), alpha=alpha, out=torch.empty(0, dtype=want.dtype, device=D))
            same(got, want, equal_nan=True)
    with pytest.raises(RuntimeError, match="Unsupported datatype for add_relu"):
        ops._add_relu.Tensor(torch.ones(3, dtype=torch.uint8, device=D), torch.ones(3, dtype=torch.uint8, device=D))


def test_batch_norm_update_stats():
    x = sample(8, 3, 5, 4, seed=12) * 2 + 1
    for xs, stats_dtype in ((x, torch.float32), (x.double(), torch.float64),
                            (x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), torch.float32),
                            (x.bfloat16(), torch.float32)):
        rm, rv = torch.zeros(3, dtype=stats_dtype), torch.ones(3, dtype=stats_dtype)
        lm, lv = rm.to(D), rv.to(D)
        want = torch.batch_norm_update_stats(xs, rm, rv, 0.1)
        got = torch.batch_norm_update_stats(xs.to(D), lm, lv, 0.1)
        tol = dict(rtol=1e-2, atol=1e-2) if xs.dtype == torch.bfloat16 else {}
        for g, w in zip(got, want):
            same(g, w, **tol)
        same(lm, rm, **tol)
        same(lv, rv, **tol)
    mean, var = torch.batch_norm_update_stats(x.to(D), None, None, 0.1)
    same(var, torch.batch_norm_update_stats(x, None, None, 0.1)[1])
    with pytest.raises(RuntimeError, match="batch_norm_update_stats_cpu"):
        torch.batch_norm_update_stats(x.half().to(D), None, None, 0.1)


# Ops with a CPU kernel that have no Loom kernel, and why; anything else falling back is a
# gap this test names. (Composite ops need no kernel: they run Loom's.)
WITHOUT_KERNEL = {
    r"quantiz|_make_per_\w+_quantized|_empty_\w*affine_quantized|dequantize|_fake_quantize|"
    r"_fused_moving_avg_obs_fq": "quantized tensors are not supported",
    r"sparse|sspaddmm|_spdiags|_convert_indices_from|_validate_compressed|to_mkldnn":
        "sparse and mkldnn layouts",
    r"nested|_jagged_to_padded_dense|_padded_dense_to_jagged": "nested (jagged) tensors",
    r"linalg|cholesky|geqrf|ormqr|lu_unpack|triangular_solve|_symeig|_compute_linear_combination":
        "LAPACK-based linear algebra runs on the CPU through the fallback (README)",
    r"_fft_": "FFTs run on the CPU through the fallback",
    r"slow_conv|_slow_conv2d": "convolution takes Loom's own path; these CPU-only paths are not reached",
    r"_native_multi_head_attention|_native_decoder_only|_transform_bias_rescale_qkv|"
    r"_transformer_\w+_fwd|_masked_softmax": "the transformer fast path, taken for CPU and CUDA inputs only",
    r"_weight_norm_interface": "weight_norm's fused kernel, taken for CUDA inputs only",
    r"poisson|binomial|_standard_gamma|_sample_dirichlet|_dirichlet_grad":
        "samplers by rejection (torch.distributions' Gamma, Beta, Dirichlet, Poisson, Binomial)",
    r"_ctc_loss": "CTC loss",
    r"glu_jvp|glu_backward_jvp": "forward-mode AD of glu",
    r"_foobar|_test_|from_file": "test-only ops and file-backed storage",
    # torch 2.x's
    r"_fused_sdp_choice|_scaled_dot_product_flash_attention_for_cpu":
        "attention's fused CPU kernels, chosen for CPU inputs only (Loom's take the math "
        "composite: test_torch2_ops)",
    r"mkldnn_rnn_layer": "the CPU's oneDNN RNN layers, taken for CPU inputs only",
    r"_int_mm|_weight_int\d+pack_mm|_convert_weight_to_int4pack":
        "integer and packed-weight matmuls of quantized models",
    r"_functional_assert_async|_make_dep_token": "export's functional assertions",
}


def test_every_cpu_kernel_has_a_loom_kernel_or_a_reason():
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    missing = []
    for name in torch._C._dispatch_get_registrations_for_dispatch_key("CPU"):
        name = name if name.startswith("aten::") else "aten::" + name
        if name.count("::") > 1:
            continue
        if has(name, "PrivateUse1") or any(
                has(name, k) for k in ("CompositeImplicitAutograd", "CompositeExplicitAutograd",
                                       "CompositeExplicitAutogradNonFunctional")):
            continue
        if not any(re.search(p, name) for p in WITHOUT_KERNEL):
            missing.append(name)
    assert missing == []
