"""Matrix products against CPU torch: BLAS extern calls for float32/float64, generated
reductions for other dtypes, fused epilogues, layouts, errors and backward."""
import pytest
import torch

import loom
from cpu_errors import raises_like_cpu

D = loom.device


def sample(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float64)
    if dtype.is_floating_point:
        return t.to(dtype)
    return (t * 4).round().to(dtype)


def run_both(fn, *args):
    want = fn(*args)
    loom.reset_metrics()
    got = fn(*[a.to(D) if isinstance(a, torch.Tensor) else a for a in args])
    got_cpu = got.cpu()
    m = loom.metrics()
    assert m["fallbacks"] == {}
    assert got_cpu.dtype == want.dtype and got_cpu.shape == want.shape
    assert got.stride() == want.stride()
    tol = 1e-5 if want.dtype in (torch.float32, torch.float64) else 0
    torch.testing.assert_close(got_cpu, want, rtol=tol, atol=tol, equal_nan=True)
    return m


LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t().contiguous().t(),
    "strided": lambda t: torch.cat([t, t], 1)[:, ::2] if t.dim() == 2 else t,
}


@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_mm(la, lb, dtype):
    a, b = sample((5, 7), dtype, 1), sample((7, 3), dtype, 2)
    m = run_both(lambda x, y: LAYOUTS[la](x) @ LAYOUTS[lb](y), a, b)
    if dtype != torch.int64:
        assert m["extern_calls"] == 1


def test_mm_takes_the_blas_result_without_a_copy():
    a, b = sample((64, 32), seed=1), sample((32, 16), seed=2)
    m = run_both(torch.mm, a, b)
    assert m["extern_calls"] == 1 and m["kernels_run"] == 0


def test_reduced_float_mm_matches_float_rounded():
    a, b = sample((6, 9), seed=3), sample((9, 4), seed=4)
    for dtype in (torch.float16, torch.bfloat16):
        got = (a.to(dtype).to(D) @ b.to(dtype).to(D)).cpu()
        want = (a.to(dtype).float() @ b.to(dtype).float()).to(dtype)
        assert got.dtype == dtype
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1), (0, 3)])
def test_addmm(beta, alpha):
    c, a, b = sample((5, 3), seed=5), sample((5, 7), seed=6), sample((7, 3), seed=7)
    c[0, 0] = float("nan")  # beta == 0 ignores self, NaN included
    m = run_both(lambda s, x, y: torch.addmm(s, x, y, beta=beta, alpha=alpha), c, a, b)
    assert m["extern_calls"] == 1 and m["kernels_run"] == 1


def test_linear_bias_relu_is_one_kernel_after_the_gemm():
    x, w, b = sample((8, 16), seed=8), sample((4, 16), seed=9), sample((4,), seed=10)
    m = run_both(lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b)), x, w, b)
    assert m["extern_calls"] == 1 and m["kernels_run"] == 1


def test_addmm_inplace_and_out():
    c, a, b = sample((5, 3), seed=11), sample((5, 7), seed=12), sample((7, 3), seed=13)
    run_both(lambda s, x, y: s.clone().addmm_(x, y, alpha=0.5), c, a, b)
    run_both(lambda s, x, y: torch.addmm(s, x, y, out=torch.empty(0, device=s.device)), c, a, b)
    run_both(lambda x, y: torch.mm(x, y, out=torch.empty(0, device=x.device)), a, b)


def test_batched():
    a, b, c = sample((4, 5, 7), seed=14), sample((4, 7, 3), seed=15), sample((4, 5, 3), seed=16)
    run_both(torch.bmm, a, b)
    run_both(lambda x, y: torch.bmm(x.transpose(1, 2).contiguous().transpose(1, 2), y), a, b)
    run_both(lambda s, x, y: torch.baddbmm(s, x, y, beta=2, alpha=0.5), c, a, b)
    run_both(torch.matmul, a, b[0])
    run_both(lambda x, y: torch.einsum("bij,bjk->bik", x, y), a, b)


def test_vector_products():
    a = sample((6, 9), seed=17)
    run_both(torch.dot, a[0], a[1])
    run_both(torch.mv, a, a[2])
    run_both(torch.matmul, a[0], a.t())


def test_empty_inner_dim():
    run_both(torch.mm, torch.zeros(3, 0), torch.zeros(0, 4))
    run_both(lambda s, x, y: torch.addmm(s, x, y, beta=2), torch.ones(3, 4), torch.zeros(3, 0),
             torch.zeros(0, 4))


@pytest.mark.parametrize("fn", [
    lambda a: torch.mm(a, a),
    lambda a: torch.mm(a, a.long()),
    lambda a: torch.bmm(a, a),
    lambda a: torch.dot(a[0], a[0, :3]),
    lambda a: torch.mv(a, a[0, :2]),
])
def test_errors_match_cpu(fn):
    a = sample((5, 7), seed=18)
    raises_like_cpu(lambda: fn(a), lambda: fn(a.to(D)), first_line=False, expected=RuntimeError)


def test_linear_backward():
    x, w, b = sample((8, 16), seed=19), sample((4, 16), seed=20), sample((4,), seed=21)
    grads = []
    for dev in ("cpu", D):
        xs, ws, bs = (t.detach().to(dev).requires_grad_() for t in (x, w, b))
        torch.nn.functional.linear(xs, ws, bs).square().sum().backward()
        grads.append([t.grad.cpu() for t in (xs, ws, bs)])
    for g_cpu, g_loom in zip(*grads):
        torch.testing.assert_close(g_loom, g_cpu, rtol=1e-5, atol=1e-5)


def test_a_pending_operand_is_stored_as_it_lies_for_a_transposed_read():
    """A weight gradient reads the output gradient transposed: the pending value is stored
    once in its own layout (a contiguous store) and BLAS reads it transposed; the input
    gradient's product reads the same storage. One kernel for two products (it was a
    transposing store for one and another store for the other)."""
    g0, x, w = sample((32, 24), seed=30), sample((32, 16), seed=31), sample((24, 8), seed=32)
    want = None
    for dev in ("cpu", D):
        gs, xs, ws = g0.to(dev), x.to(dev), w.to(dev)
        loom.sync()
        loom.reset_metrics()
        g = gs * 2 + 1
        outs = [torch.mm(g.t(), xs), torch.mm(g, ws)]
        del g
        got = [o.cpu() for o in outs]
        if dev == "cpu":
            want = got
            continue
        m = loom.metrics()
        assert (m["kernels_run"], m["extern_calls"]) == (1, 2)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


DOT_ERRORS = [
    lambda d: torch.dot(torch.ones(3, 3, device=d), torch.ones(3, dtype=torch.long, device=d)),
    lambda d: torch.dot(torch.ones(3, device=d), torch.ones(3, dtype=torch.double, device=d)),
    lambda d: torch.dot(torch.ones(3, device=d), torch.ones(4, device=d)),
    lambda d: torch.vdot(torch.ones(2, 2, device=d), torch.ones(4, device=d)),
]


@pytest.mark.parametrize("i", range(len(DOT_ERRORS)))
def test_dot_errors_in_the_cpu_order(i):
    from cpu_errors import raises_like_cpu
    raises_like_cpu(lambda: DOT_ERRORS[i]("cpu"), lambda: DOT_ERRORS[i](loom.device))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["plain", "a_t", "b_t", "batched"])
def test_reduced_float_products_are_library_calls(dtype, layout):
    """NOTE [Reduced-float products]: bfloat16 and float16 products run as one library call
    (oneDNN's bfloat16 matmul where it is native, else float32 sgemm on widened operands),
    rounded once; values as the CPU's (float16, which the CPU 1.13 does not multiply, as
    float32 rounded)."""
    g = torch.Generator().manual_seed(4)
    a, b = torch.randn(3, 64, 96, generator=g), torch.randn(3, 96, 80, generator=g)
    if layout == "a_t":
        a = a.transpose(1, 2).contiguous().transpose(1, 2)
    if layout == "b_t":
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    if layout != "batched":
        a, b = a[0], b[0]
    a, b = a.to(dtype), b.to(dtype)
    al, bl = a.to(loom.device), b.to(loom.device)
    loom.sync()
    loom.reset_metrics()
    got = (al @ bl).cpu()
    assert loom.metrics()["extern_calls"] == 1
    want = (a @ b) if dtype == torch.bfloat16 else (a.float() @ b.float()).to(dtype)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want)


def test_bfloat16_products_run_concurrently_without_a_race():
    """NOTE [bfloat16 products]: the two row blocks of a product run one oneDNN primitive
    on two threads at once, each with a scratchpad of its own; on the primitive's shared
    scratchpad about one product in 300 came out wrong."""
    for it in range(300):
        g = torch.Generator().manual_seed(it)
        a = torch.randn(32 + it % 70, 96, generator=g).bfloat16()
        b = torch.randn(96, 80, generator=g).bfloat16()
        got = (a.to(loom.device) @ b.to(loom.device)).cpu()
        torch.testing.assert_close(got.float(), (a @ b).float(), rtol=0.02, atol=0.05)
