"""torch.multinomial on Loom: Loom's random numbers (NOTE [Loom RNG]), so the checks are
on what any sampler must give: the CPU's shapes and dtype, no zero-probability category,
distinct categories without replacement, the distribution's frequencies, reproducibility
under a seed, the CPU's errors for bad arguments at the op, and its messages for bad
distributions at realization (nothing is realized at the op). No fallbacks."""
import pytest
import torch

import loom
from cpu_errors import raises_like_cpu

D = loom.device
P = torch.tensor([[0.1, 0.0, 0.6, 0.3, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0], [2.0, 1.0, 0.5, 0.25, 4.0]])


@pytest.fixture
def no_fallbacks():
    loom.reset_metrics()
    yield
    assert loom.metrics()["fallbacks"] == {}


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("n", [1, 2, 7])
@pytest.mark.parametrize("rows", [None, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_samples_are_valid(replacement, n, rows, dtype, no_fallbacks):
    p = (P if rows else P[2]).to(dtype)
    if not replacement and n >= 2 and rows:
        p = p + 0.01  # every row needs n categories of nonzero probability
    if not replacement and n > p.shape[-1]:
        return
    torch.manual_seed(n)
    s = torch.multinomial(p.to(D), n, replacement=replacement)
    want_shape = (3, n) if rows else (n,)
    assert s.dtype == torch.long and s.shape == want_shape and s.stride() == torch.empty(want_shape).stride()
    got = s.cpu().reshape(-1, n)
    probs = p.float().reshape(-1, p.shape[-1])
    for row, pr in zip(got.tolist(), probs):
        assert all(pr[c] > 0 for c in row)
        if not replacement:
            assert len(set(row)) == n


@pytest.mark.parametrize("replacement,n", [(True, 40), (False, 1)])
def test_frequencies(replacement, n, no_fallbacks):
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.0])
    torch.manual_seed(5)
    s = torch.multinomial(probs.to(D).expand(4000, 5), n, replacement=replacement).cpu()
    freq = torch.bincount(s.flatten(), minlength=5).double() / s.numel()
    assert torch.allclose(freq, probs.double(), atol=0.02), freq
    assert freq[4] == 0


def test_first_draw_without_replacement_follows_the_distribution(no_fallbacks):
    probs = torch.tensor([1.0, 2.0, 3.0, 4.0])
    torch.manual_seed(6)
    s = torch.multinomial(probs.to(D).expand(8000, 4), 4).cpu()
    assert all(sorted(r) == [0, 1, 2, 3] for r in s.tolist()[:200])
    freq = torch.bincount(s[:, 0], minlength=4).double() / 8000
    assert torch.allclose(freq, probs.double() / 10, atol=0.02), freq


def test_seeded_and_generator_and_out(no_fallbacks):
    p = P.to(D)
    torch.manual_seed(11)
    a = torch.multinomial(p, 2, replacement=True).cpu()
    torch.manual_seed(11)
    b = torch.multinomial(p, 2, replacement=True).cpu()
    assert torch.equal(a, b)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert torch.equal(torch.multinomial(p, 3, True, generator=g1).cpu(),
                       torch.multinomial(p, 3, True, generator=g2).cpu())
    out = torch.empty(3, 4, dtype=torch.long, device=D)[:, ::2]  # a strided out
    r = torch.multinomial(p + 0.1, 2, out=out)
    assert r.data_ptr() == out.data_ptr() and out.shape == (3, 2)
    assert all(len(set(row)) == 2 for row in out.cpu().tolist())


def test_pending_probabilities_are_not_realized(no_fallbacks):
    logits = torch.randn(4, 6, device=D)
    loom.sync()
    loom.reset_metrics()
    s = torch.multinomial(torch.softmax(logits, -1), 2)
    assert loom.metrics()["realizations"] == 0
    assert s.cpu().shape == (4, 2)


@pytest.mark.parametrize("replacement", [False, True])
@pytest.mark.parametrize("bad", [[0.5, -0.1, 0.2], [float("nan"), 1.0, 1.0], [float("inf"), 1.0, 1.0],
                                 [0.0, 0.0, 0.0]])
def test_bad_distribution_raises_at_realization(bad, replacement):
    with pytest.raises(RuntimeError) as want:
        torch.multinomial(torch.tensor(bad), 2, replacement=replacement)
    s = torch.multinomial(torch.tensor(bad, device=D), 2, replacement=replacement)
    with pytest.raises(RuntimeError) as got:
        s.cpu()
    assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]


@pytest.mark.parametrize("bad", [
    lambda d: torch.multinomial(torch.ones(2, 2, 2, device=d), 1),
    lambda d: torch.multinomial(torch.ones((), device=d), 1),
    lambda d: torch.multinomial(torch.ones(3, dtype=torch.long, device=d), 1),
    lambda d: torch.multinomial(torch.ones(3, device=d), 0),
    lambda d: torch.multinomial(torch.ones(3, device=d), 4),
    lambda d: torch.multinomial(torch.ones(3, device=d), 1, out=torch.empty(1, device=d)),
])
def test_argument_errors(bad):
    raises_like_cpu(lambda: bad("cpu"), lambda: bad(D))
