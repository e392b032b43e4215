"""Differential fuzzing of fusion: random dataflow programs, Loom against CPU torch.

Where test_fuzz_views.py stresses views and writes, this fuzzer stresses how values are cut
into kernels: reductions read back through broadcasts (a row's statistics, a whole
tensor's, a column's), reductions of reductions, softmax and normalizations over any dim,
scans, arg reductions, values read through transposes and slices of intermediates, and
in-place writes of such values. Which values stay alive decides what fusion stores and
what it inlines (NOTE [Live state]), so the program keeps a small pool of values and drops
older ones at random; realizations happen at random points (a value read on the host, a
sync), so each value is fused with or without its neighbours. Shapes cross the thresholds
of the scheduler: a whole reduction placed before the output loops or in a kernel of its
own (NOTE [Whole reductions]), split reductions from 2^19 elements. Library products,
batch and group norms, pooling with indices, masks, gathers and joins bring in extern
calls, shared statistics and cohorts. A third of the
programs then take the gradient of a weighted sum of their values with respect to their
inputs, which brings the backward's fusion in (cohorts, shared statistics).

Every value is compared with the CPU's: dtype, sizes, strides, and values. Floating point
values agree within a tolerance, widened where the value is ill-conditioned: a sum of
centered values cancels to rounding noise, which Loom's blocked sums and the CPU's
cascaded ones round differently, and a layer norm of a constant row multiplies such noise
by 1/sqrt(eps). The CPU runs each program again in the other float precision (a
reference): a float32 value may stray from the CPU's by 4 times the CPU's own largest
distance from the float64 run, a float64 value by 4 times its largest distance from the
float32 run scaled by the two precisions' ratio (2^-29). A value that strays from its
reference by more than a thousandth somewhere (a normalized constant row), and everything
computed from it, is rounding noise on both devices: only its dtype, sizes and layout are
compared, and its gradients are left out. No step may fall back to the CPU.

LOOM_FUZZ_EXAMPLES sets the number of programs (default 150 here; `make test-fuzz` runs
more), LOOM_FUZZ_SEED=<int> draws other programs.
"""
import pytest
import torch
from hypothesis import event, note
from hypothesis import strategies as st

import loom
from fuzzing import Mismatch, check_layout, fuzz_test, on_both

D = loom.device

# (1000,) and (1, 777): one row; (257, 256) and (70000,): past the whole-reduction bound;
# (1 << 19,): split reductions.
SHAPES = [(7,), (1000,), (1, 777), (3, 50), (6, 1, 33), (2, 5, 7), (65, 33), (257, 256),
          (4, 3, 2, 5), (70000,), (1 << 19,)]
DTYPES = [torch.float32, torch.float64]
MAX_POOL = 6
MAX_STEPS = 10


def check(got, want, what, ref=None, values=True):
    """got (Loom) against want (CPU); ref: want's program run in the other precision.
    `values`: whether the values are compared, not only dtype, sizes and layout."""
    check_layout(got, want, what)
    got = got.cpu()
    if not values:
        event("values left out: noisy")
        return
    if want.dtype.is_floating_point:
        scale = want.abs().max().item() if want.numel() else 0.0
        tol = (1e-4 if want.dtype == torch.float32 else 1e-9) * max(1.0, scale)
        if ref is not None and ref.dtype.is_floating_point and want.numel():
            # The reference's error against want's: float64's is about 2^-29 of float32's.
            # Over the whole value: where rounding noise dominates, the CPU may land near the
            # reference at an element by chance, and Loom not.
            factor = 4.0 if want.dtype == torch.float32 else 4.0 * 2.0 ** -29
            stray = (want.double() - ref.double()).abs().nan_to_num(0).max().item()
            tol = max(tol, factor * stray)
        diff = (got - want).abs()
        close = (diff <= tol + 1e-4 * want.abs()) | (got == want) | (got.isnan() & want.isnan())
        ok = bool(close.all())
    else:
        ok = torch.equal(got, want)
    if not ok:
        diff = (got.double() - want.double()).abs().nan_to_num(float("inf"))
        i = int(diff.flatten().argmax())
        raise Mismatch(f"{what}: values differ, most at flat index {i}: got "
                       f"{got.flatten()[i].item()}, want {want.flatten()[i].item()}")


class Value:
    """One value of the program: on the CPU, on Loom, and on the CPU in the other float
    precision (the reference). `noisy`: some element of it, or of a value it was computed
    from, is mostly rounding noise (the two precisions' values differ by more than a
    thousandth: the mean of centered values, a normalized constant row), where values differ
    by more than any tolerance and a gradient's sign may flip (abs) or blow up (sqrt), on
    either device."""

    def __init__(self, cpu, dev, ref, name, noisy=False):
        self.cpu, self.dev, self.ref, self.name = cpu, dev, ref, name
        self.noisy = noisy or (ref is not None and cpu.dtype.is_floating_point and bool(
            ((cpu.double() - ref.double()).abs() > 1e-3 * ref.double().abs() + 1e-30).any()))

    def check(self):
        # A noisy value's elements are each device's rounding noise (a layer norm of a
        # constant row scales it by 1/sqrt(eps), Loom's blocked sums and the CPU's
        # cascaded ones leave different noise): only its metadata is compared.
        check(self.dev, self.cpu, self.name, self.ref, values=not self.noisy)


class Program:
    def __init__(self, data, reference):
        self.data = data
        self.pool = []
        self.count = 0
        self.reference = reference  # the reference's dtype (Value.ref)
        self.inputs = []  # the program's inputs, the same bits on both devices

    def draw(self, strategy, label=None):
        return self.data.draw(strategy, label=label)

    def add(self, cpu, dev, ref, how, noisy=False):
        self.count += 1
        name = f"t{self.count}"
        note(f"{name} = {how}")
        if cpu.dtype != dev.dtype or cpu.shape != dev.shape:
            raise Mismatch(f"{how}: {dev.dtype} {tuple(dev.shape)} != {cpu.dtype} "
                           f"{tuple(cpu.shape)}")
        self.pool.append(Value(cpu, dev, ref, name, noisy))
        if len(self.pool) > MAX_POOL:
            dropped = self.pool.pop(self.draw(st.integers(0, len(self.pool) - 2)))
            note(f"del {dropped.name}")
        return self.pool[-1]

    def pick(self, floating=True):
        choices = [e for e in self.pool if e.cpu.dtype.is_floating_point or not floating]
        return choices[self.draw(st.integers(0, len(choices) - 1))]

    def apply(self, how, fn, *entries):
        text = how.format(*[e.name for e in entries])
        pair = on_both(text, lambda: fn(*[e.cpu for e in entries]),
                       lambda: fn(*[e.dev for e in entries]))
        if pair is None:
            return
        want, got = pair
        ref = fn(*[e.ref for e in entries])
        event(how.split("(")[0])
        self.add(want, got, ref, text, any(e.noisy for e in entries))

    def check_all(self):
        note("check")
        for v in self.pool:
            v.check()


def dims_of(p, t, allow_all=True):
    """A non-empty set of dims of t (None: all of them)."""
    if t.dim() == 0:
        return None
    if allow_all and p.draw(st.integers(0, 3)) == 0:
        return None
    k = p.draw(st.integers(1, t.dim()))
    return tuple(sorted(p.draw(st.permutations(range(t.dim())))[:k]))


def one_dim(p, t):
    return p.draw(st.integers(-t.dim(), t.dim() - 1)) if t.dim() else 0


REDUCTIONS = {
    "sum": lambda t, d, k: t.sum(d, keepdim=k) if d is not None else t.sum(),
    "mean": lambda t, d, k: t.mean(d, keepdim=k) if d is not None else t.mean(),
    "amax": lambda t, d, k: t.amax(d, keepdim=k) if d is not None else t.amax(),
    "amin": lambda t, d, k: t.amin(d, keepdim=k) if d is not None else t.amin(),
    "var": lambda t, d, k: t.var(d, keepdim=k) if d is not None else t.var(),
    "logsumexp": lambda t, d, k: torch.logsumexp(t, d if d is not None else
                                                 tuple(range(t.dim())), keepdim=k),
    "norm": lambda t, d, k: torch.linalg.vector_norm(t, 2, d, keepdim=k),
}

UNARY = {
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "abs": torch.abs,
    "neg": torch.neg,
    "relu": torch.relu,
    "sqrt_abs": lambda t: t.abs().sqrt(),
    "exp_tanh": lambda t: t.tanh().exp(),
    "scale": lambda t: t * 1.5 - 0.25,
}

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": lambda a, b: a / (b.abs() + 1),
    "maximum": torch.maximum,
}


def step_unary(p):
    name = p.draw(st.sampled_from(sorted(UNARY)))
    p.apply(f"{name}({{}})", UNARY[name], p.pick())


def step_reduce(p):
    x = p.pick()
    name = p.draw(st.sampled_from(sorted(REDUCTIONS)))
    d = dims_of(p, x.cpu)
    keep = p.draw(st.booleans())
    fn = REDUCTIONS[name]
    if name == "var" and (x.cpu.numel() if d is None else
                          torch.Size([x.cpu.shape[i] for i in d]).numel()) < 2:
        name, fn = "sum", REDUCTIONS["sum"]
    p.apply(f"{name}({{}}, {d}, keepdim={keep})", lambda t: fn(t, d, keep), x)


def step_normalize(p):
    """A value combined with its own statistics read back through a broadcast."""
    x = p.pick()
    d = dims_of(p, x.cpu)
    dd = d if d is not None else tuple(range(x.cpu.dim()))
    kind = p.draw(st.sampled_from(["center", "share", "scale_max", "standardize", "layer"]))
    if kind == "center":
        fn = lambda t: t - t.mean(dd, keepdim=True)  # noqa: E731
    elif kind == "share":
        fn = lambda t: t.abs() / (t.abs().sum(dd, keepdim=True) + 1)  # noqa: E731
    elif kind == "scale_max":
        fn = lambda t: t * t.amax(dd, keepdim=True).reciprocal().nan_to_num(0)  # noqa: E731
    elif kind == "standardize":
        fn = lambda t: (t - t.mean(dd, keepdim=True)) / (t.std(dd, keepdim=True, correction=0) + 1)  # noqa: E731,E501
    else:
        n = p.draw(st.integers(1, max(x.cpu.dim(), 1)))
        fn = lambda t: torch.nn.functional.layer_norm(t, t.shape[t.dim() - n:])  # noqa: E731
    p.apply(f"{kind}({{}}, {d})", fn, x)


def step_softmax(p):
    x = p.pick()
    d = one_dim(p, x.cpu)
    kind = p.draw(st.sampled_from(["softmax", "log_softmax", "cumsum", "logcumsumexp"]))
    fns = {"softmax": lambda t: torch.softmax(t, d), "log_softmax": lambda t: torch.log_softmax(t, d),
           "cumsum": lambda t: torch.cumsum(t, d), "logcumsumexp": lambda t: torch.logcumsumexp(t, d)}
    p.apply(f"{kind}({{}}, {d})", fns[kind], x)


def step_binary(p):
    """Two values broadcast together: one may be a reduction of the other's shape."""
    a, b = p.pick(), p.pick()
    try:
        # An outer product of two large values (a column against a long row) is too big.
        if torch.broadcast_shapes(a.cpu.shape, b.cpu.shape).numel() > (1 << 21):
            raise RuntimeError("too large")
    except RuntimeError:
        # Reduce b to a shape that broadcasts against a: its statistics over all dims.
        name = p.draw(st.sampled_from(["sum", "amax", "mean"]))
        fn = REDUCTIONS[name]
        b = p.add(fn(b.cpu, None, False), fn(b.dev, None, False),
                  fn(b.ref, None, False), f"{name}({b.name})", b.noisy)
        # a stays held here even if the pool dropped it
    name = p.draw(st.sampled_from(sorted(BINARY)))
    p.apply(f"{name}({{}}, {{}})", BINARY[name], a, b)


def step_view(p):
    x = p.pick(floating=False)
    t = x.cpu
    kind = p.draw(st.sampled_from(["transpose", "slice", "unsqueeze", "flip", "contiguous"]))
    if kind == "transpose" and t.dim() >= 2:
        perm = tuple(p.draw(st.permutations(range(t.dim()))))
        p.apply(f"{{}}.permute({perm})", lambda v: v.permute(perm), x)
    elif kind == "slice" and t.dim() >= 1:
        d = one_dim(p, t)
        n = t.shape[d]
        start = p.draw(st.integers(0, max(n - 1, 0)))
        step = p.draw(st.integers(1, 3))
        p.apply(f"{{}}.narrow-step({d}, {start}::{step})",
                lambda v: v.transpose(0, d)[start::step].transpose(0, d), x)
    elif kind == "unsqueeze":
        d = p.draw(st.integers(0, t.dim()))
        p.apply(f"{{}}.unsqueeze({d})", lambda v: v.unsqueeze(d), x)
    elif kind == "flip" and t.dim() >= 1:
        d = one_dim(p, t)
        p.apply(f"{{}}.flip({d})", lambda v: v.flip(d), x)
    else:
        p.apply("{}.contiguous()", lambda v: v.contiguous(), x)


def step_arg(p):
    """An arg reduction, used as an integer value and as an offset into a float one."""
    x = p.pick()
    t = x.cpu
    name = p.draw(st.sampled_from(["argmax", "argmin"]))
    if t.dim() and p.draw(st.booleans()):
        d = one_dim(p, t)
        keep = p.draw(st.booleans())
        p.apply(f"{name}({{}}, {d}, keepdim={keep})", lambda v: getattr(v, name)(d, keep), x)
    else:
        p.apply(f"{{0}} + {name}({{0}})", lambda v: v + getattr(v, name)().to(v.dtype) / 1000, x)


def step_write(p):
    """An in-place write of a value computed from its own statistics: into a fresh copy,
    or into the value itself (which every alias of it in the pool then sees)."""
    x = p.pick()
    d = dims_of(p, x.cpu)
    dd = d if d is not None else tuple(range(x.cpu.dim()))
    # Not into a value that requires grad from its own statistics: PyTorch 1.13 then leaks
    # the tensor and its graph (a reference cycle through autograd's C++ nodes, on the CPU
    # as on Loom: `y = x * 1; y.sub_(y.mean(1, keepdim=True))` with x requiring grad), and
    # thousands of programs ran out of memory. The copy subtracts the original's.
    # Nor into an input (or a view of one), which bfloat16 casts read as exact.
    shares_input = any(x.cpu.storage().data_ptr() == i.cpu.storage().data_ptr()
                       for i in p.inputs)
    if not x.cpu.requires_grad and not shares_input and p.draw(st.booleans()):
        p.apply(f"{{}}.sub_(mean {d})", lambda t: t.sub_(t.mean(dd, keepdim=True)), x)
        return

    def fn(t):
        c = t.clone()
        c.sub_(t.mean(dd, keepdim=True)).mul_(0.5)
        return c
    p.apply(f"clone({{0}}).sub_(mean {d} of {{0}}).mul_(0.5)", fn, x)


def as_matrix(t):
    """t as rows of its last dim (a 0-dim or 1-dim value as one row)."""
    return t.reshape(-1, t.shape[-1]) if t.dim() else t.reshape(1, 1)


def step_product(p):
    """A matrix product (a library call, whose operands leave the graph), with a bias and
    an activation after it, as a linear layer's."""
    x = p.pick()
    if x.cpu.numel() > (1 << 16):
        return step_reduce(p)
    act = p.draw(st.sampled_from(["none", "relu", "gelu", "tanh"]))
    acts = {"none": lambda v: v, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "tanh": torch.tanh}

    def fn(t):
        m = as_matrix(t)
        return acts[act](m @ m.t() / m.shape[1] + m.mean(1))
    p.apply(f"linear({{}}, {act})", fn, x)


def step_batch_norm(p):
    """Batch norm in training mode over dim 1 (statistics shared with the backward:
    NOTE [Shared statistics]), or group norm."""
    x = p.pick()
    t = x.cpu
    if t.dim() < 2 or t.shape[0] * t.shape[2:].numel() < 2:
        return step_normalize(p)
    kind = p.draw(st.sampled_from(["batch", "group", "instance"]))
    c = t.shape[1]

    def fn(v):
        w = torch.linspace(0.5, 1.5, c, dtype=v.dtype, device=v.device)
        b = torch.linspace(-0.2, 0.3, c, dtype=v.dtype, device=v.device)
        if kind == "batch":
            return torch.nn.functional.batch_norm(v, None, None, w, b, training=True)
        if kind == "group":
            return torch.nn.functional.group_norm(v, 1, w, b)
        return torch.nn.functional.instance_norm(v, weight=w, bias=b) if v.dim() >= 3 else \
            torch.nn.functional.batch_norm(v, None, None, w, b, training=True)
    p.apply(f"{kind}_norm({{}})", fn, x)


def step_pool(p):
    """Max pooling with its indices (a cohort: NOTE [Cohorts]) or average pooling, over the
    last dim of a value as (N, C, L)."""
    x = p.pick()
    t = x.cpu
    if t.dim() == 0 or t.shape[-1] < 2:
        return step_unary(p)
    kind = p.draw(st.sampled_from(["max", "avg", "max_indices"]))
    # No longer than a row: CPU's max_pool1d then returns an empty result without grad or
    # indices and raises with them (Loom raises, as its other paths and CUDA's do).
    k = min(p.draw(st.integers(2, 3)), t.shape[-1])

    def fn(v):
        m = v.reshape(1, -1, v.shape[-1])
        if kind == "avg":
            return torch.nn.functional.avg_pool1d(m, k, ceil_mode=True)
        r = torch.nn.functional.max_pool1d(m, k, return_indices=kind == "max_indices")
        return r[1] if kind == "max_indices" else r
    p.apply(f"{kind}_pool({{}}, {k})", fn, x)


def step_select(p):
    """Masks, gathers and joins of values."""
    x = p.pick()
    t = x.cpu
    kind = p.draw(st.sampled_from(["where", "masked_fill", "gather", "index_select", "cat",
                                   "half"]))
    if kind == "where":
        # Against a constant: a value against its own mean picks its branch by rounding
        # where the value is constant (the mean of 1000 copies of x need not be x).
        p.apply("where({0} > 0.25, {0}, -{0})", lambda v: torch.where(v > 0.25, v, -v), x)
    elif kind == "masked_fill":
        p.apply("{0}.masked_fill({0} < 0, 0.5)", lambda v: v.masked_fill(v < 0, 0.5), x)
    elif kind in ("gather", "index_select") and t.dim() >= 1 and t.shape[-1] > 1:
        n = t.shape[-1]
        idx = torch.tensor([(i * 7 + 3) % n for i in range(min(n, 64))])
        if kind == "index_select":
            p.apply("{}.index_select(-1, ...)",
                    lambda v: v.index_select(-1, idx.to(v.device)), x)
        else:
            p.apply("{}.gather(-1, argsort)",
                    lambda v: v.gather(-1, torch.sort(v, stable=True, dim=-1)[1]), x)
    elif kind == "cat" and t.dim() >= 1:
        d = one_dim(p, t)
        p.apply(f"cat({{0}}, {{0}}.flip, {d})",
                lambda v: torch.cat([v, v.flip(d) * 0.5], d), x)
    else:
        # Of an input: a cast of a computed value rounds the devices' last-bit differences
        # into whole bfloat16 steps where they straddle a rounding boundary.
        # Detached: a gradient rounded to bfloat16 on its way back turns the devices'
        # last-bit differences upstream into whole bfloat16 steps the same way.
        x = p.inputs[p.draw(st.integers(0, len(p.inputs) - 1))]
        p.apply("{}.detach().bfloat16().to(back)",
                lambda v: (v.detach().to(torch.bfloat16) * 3).to(v.dtype), x)


def step_realize(p):
    """A value read on the host, or everything synchronized."""
    if p.draw(st.booleans()):
        v = p.pick(floating=False)
        note(f"read {v.name}")
        v.check()
    else:
        note("sync")
        loom.sync()


STEPS = ([step_product, step_batch_norm, step_pool, step_select, step_select] +
         [step_unary] * 2 + [step_reduce] * 3 + [step_normalize] * 3 + [step_softmax] * 2 +
         [step_binary] * 3 + [step_view] * 2 + [step_arg] + [step_write] + [step_realize])


def weights(t):
    """A fixed, varying weight per element, so that a sum's gradient is not uniform."""
    n = t.numel()
    return torch.linspace(-1.5, 2, n, dtype=t.dtype, device=t.device).view(t.shape)


def backward_and_check(p, leaves):
    """sum(value * weights) over the program's differentiable values, backward on every
    device; the leaves' gradients must agree (or both devices raise alike)."""
    alive = [v for v in p.pool if v.cpu.requires_grad]
    if not alive:
        return
    if any(v.noisy for v in alive):
        event("backward left out: noisy values")
        return
    note("backward over " + ", ".join(v.name for v in alive))
    devs = ["cpu", "dev", "ref"]
    errors = {}
    for dev in devs:
        try:
            loss = sum((getattr(v, dev) * weights(getattr(v, dev))).sum() for v in alive)
            loss.backward()
        except RuntimeError as e:
            errors[dev] = e
    if "cpu" in errors or "dev" in errors:
        if set(errors) - {"ref"} != {"cpu", "dev"}:
            raise Mismatch(f"backward: CPU raised {errors.get('cpu')!r}, Loom {errors.get('dev')!r}")
        event("backward raised on both")
        return
    event("backward")
    for i, (c, d, r) in enumerate(leaves):
        if c.grad is None or d.grad is None:
            if (c.grad is None) != (d.grad is None):
                raise Mismatch(f"input {i}: gradient on one device only")
            continue
        check(d.grad, c.grad, f"input {i} gradient", r.grad if r is not None else None)


def run_program(data):
    shape = data.draw(st.sampled_from(SHAPES), label="shape")
    # One dtype per program: a float32 value's rounding carried into float64 would pass the
    # float64 tolerance.
    dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
    # A third of the programs take gradients with respect to their inputs, in float32, so
    # that a float64 reference tells noisy values (Value.noisy).
    grad = data.draw(st.integers(0, 2), label="gradients") == 0
    if grad:
        dtype = torch.float32
    p = Program(data, torch.float64 if dtype == torch.float32 else torch.float32)
    leaves = []
    for i in range(data.draw(st.integers(1, 2), label="inputs")):
        if i and data.draw(st.booleans()):
            shape = data.draw(st.sampled_from(SHAPES), label="shape")
        g = torch.Generator().manual_seed(len(p.pool) * 7919 + shape[-1])
        c = (torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
        trio = [c, c.to(D), c.to(p.reference)]
        if grad:
            trio = [t.requires_grad_() if t is not None else None for t in trio]
            leaves.append(trio)
        cpu, dev, ref = trio
        if data.draw(st.booleans(), label="realized") and not grad:
            p.inputs.append(p.add(cpu, dev, ref, f"input {list(shape)} {dtype}"))
        else:  # a pending value, never realized before the program reads it
            p.inputs.append(p.add(cpu * 1, dev * 1, ref * 1 if ref is not None else None,
                  f"input {list(shape)} {dtype} (pending{', requires grad' if grad else ''})"))
    if not data.draw(st.integers(0, 3), label="sync inputs"):
        loom.sync()
    for _ in range(data.draw(st.integers(1, MAX_STEPS), label="steps")):
        data.draw(st.sampled_from(STEPS), label="step")(p)
    if grad:
        backward_and_check(p, leaves)
    p.check_all()


test_random_dataflow = fuzz_test(run_program, 150)


def test_fusion_fuzz_check_catches_a_mismatch():
    """The comparison itself: a wrong value, dtype or layout is reported."""
    c = torch.arange(6.0).view(2, 3)
    with pytest.raises(Mismatch, match="values differ"):
        check(torch.zeros(2, 3, device=D), c, "x")
    with pytest.raises(Mismatch, match="layout"):
        check(torch.arange(6.0, device=D).view(3, 2).t(), c, "x")
    with pytest.raises(Mismatch, match="dtype"):
        check(torch.zeros(2, 3, device=D, dtype=torch.float64), c, "x")
