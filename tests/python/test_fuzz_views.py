"""Differential fuzzing of views, writes and reads: Loom against CPU torch.

Hypothesis generates random programs over a few base tensors: views (slices with steps,
transpose/permute, select, unsqueeze, expand, view/reshape, as_strided, diagonal,
unfold), writes through them (in-place elementwise ops, copy_ with broadcasting and
casts, fill_, zero_, setitem, out=, in-place view ops) and reads (elementwise ops,
reductions, clone). Every step runs on CPU and on Loom in lockstep; where CPU raises, Loom
must raise the same exception type. At random points and at the end every live tensor is
compared: values, dtype, sizes, strides, storage offset, view-ness and which tensors share
a storage. No step may fall back to the CPU.

LOOM_FUZZ_EXAMPLES sets the number of programs (default 500; `make test-fuzz` runs more).
The programs are derandomized, so the kernels they compile hit the disk cache next time;
LOOM_FUZZ_SEED=<int> draws other programs.

Left out on purpose, because CPU's result is undefined there: elementwise writes into a
tensor whose elements overlap in ways PyTorch cannot detect (as_strided, unfold), and
in-place/out= ops whose inputs partially overlap the output (CPU raises; Loom does not
yet, see test_views.py::test_partial_overlap_of_output_and_input_raises_like_cpu).
"""
import math

import pytest
import torch
from hypothesis import event, note
from hypothesis import strategies as st

import loom
from fuzzing import Mismatch, check_layout, fuzz_test, on_both

D = loom.device

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.uint8,
          torch.bool]
SHAPES = [(24,), (4, 6), (2, 3, 4), (5, 5)]
SCALARS = [-2, -1, 0, 1, 3, 0.5, -1.5, True]
MAX_POOL = 10
MAX_STEPS = 14


def make_base(shape, dtype, seed):
    n = torch.Size(shape).numel()
    x = (torch.arange(n) * (2 * seed + 7) + seed) % 11 - 5
    if dtype == torch.bool:
        return (x % 3 == 0).view(shape)
    if dtype == torch.uint8:
        x = x + 5
    return x.to(dtype).view(shape)


class Pair:
    """One tensor of the program on both devices, with how it was made."""

    def __init__(self, cpu, dev, name):
        self.cpu, self.dev, self.name = cpu, dev, name


class Program:
    def __init__(self, data):
        self.data = data
        self.pool = []
        self.count = 0

    def draw(self, strategy, label=None):
        return self.data.draw(strategy, label=label)

    def add(self, cpu, dev, how):
        self.count += 1
        name = f"t{self.count}"
        note(f"{name} = {how}")
        self.pool.append(Pair(cpu, dev, name))
        if len(self.pool) > MAX_POOL:
            dropped = self.pool.pop(self.draw(st.integers(0, len(self.pool) - 2)))
            note(f"del {dropped.name}")
        return self.pool[-1]

    def pick(self, label="tensor"):
        return self.pool[self.draw(st.integers(0, len(self.pool) - 1), label=label)]

    # --- running one step on both devices ---

    def run(self, how, fn, *pairs, result=None):
        """Runs fn on the CPU tensors, then on the Loom ones; adds the result to the pool.

        `result`: None for writes, "view" or "value" for steps that make a tensor.
        """
        text = how.format(*[p.name for p in pairs])
        pair = on_both(text, lambda: fn(*[p.cpu for p in pairs]),
                       lambda: fn(*[p.dev for p in pairs]))
        if pair is None:
            return None
        want, got = pair
        event("ran")
        if result is None:
            note(text)
            return None
        if isinstance(want, (tuple, list)):
            k = self.draw(st.integers(0, len(want) - 1))
            want, got = want[k], got[k]
        if not isinstance(want, torch.Tensor):
            return None
        check_meta(got, want, text)
        return self.add(want, got, text)

    # --- comparisons ---

    def check_all(self):
        note("check")
        for p in self.pool:
            check_meta(p.dev, p.cpu, p.name)
            check_values(p.dev, p.cpu, p.name)
        # The same tensors share storage on both devices (empty CPU storages all have
        # data_ptr 0, so they are left out).
        groups_c, groups_l = {}, {}
        for i, p in enumerate(self.pool):
            if p.cpu.storage().nbytes() == 0:
                continue
            groups_c.setdefault(p.cpu.storage().data_ptr(), []).append(i)
            groups_l.setdefault(p.dev.storage().data_ptr(), []).append(i)
        parts_c = sorted(groups_c.values())
        parts_l = sorted(groups_l.values())
        if parts_c != parts_l:
            raise Mismatch(f"storage sharing differs: CPU {parts_c}, Loom {parts_l}")


def check_meta(got, want, what):
    if got.device != D:
        raise Mismatch(f"{what}: on {got.device}")
    check_layout(got, want, what)
    if got._is_view() != want._is_view() or got.is_contiguous() != want.is_contiguous():
        raise Mismatch(f"{what}: _is_view/is_contiguous differ")


def check_values(got, want, what):
    got = got.cpu()
    if want.dtype.is_floating_point:
        ok = torch.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    else:
        ok = torch.equal(got, want)
    if not ok:
        bad = (got != want).nonzero().tolist()[:4]
        raise Mismatch(f"{what}: values differ at {bad}: got {got.flatten()[:10].tolist()}, "
                       f"want {want.flatten()[:10].tolist()}")


def internal_overlap(t):
    return torch._debug_has_internal_overlap(t)  # 0 no, 1 yes (stride 0), 2 too hard


def element_set(t):
    n = t.storage().size()
    return set(torch.arange(n).as_strided(t.shape, t.stride(), t.storage_offset())
               .flatten().tolist()) if t.numel() else set()


def undefined_overlap(dst, src):
    """dst and src share elements in a way CPU does not reject (so the result depends on
    CPU's loop order)."""
    if dst.storage().data_ptr() != src.storage().data_ptr():
        return False
    sd, ss = element_set(dst), element_set(src)
    if not sd & ss:
        return False
    return not (dense(dst, sd) and dense(src, ss))


def dense(t, elements):
    return len(elements) == t.numel() and max(elements) - min(elements) + 1 == t.numel()


def undefined_cast(src, dtype):
    """Float to integer conversions C leaves undefined: out of range or not finite."""
    if not src.dtype.is_floating_point or dtype.is_floating_point or dtype == torch.bool:
        return False
    if src.numel() == 0:
        return False
    info = torch.iinfo(dtype)
    lo, hi = src.double().min().item(), src.double().max().item()
    return not (math.isfinite(lo) and math.isfinite(hi) and info.min - 1 < lo
                and hi < info.max + 1)


# --- steps ---

def dims(p, t):
    return p.draw(st.integers(-t.dim(), t.dim() - 1)) if t.dim() else 0


def step_view(p):
    a = p.pick()
    t = a.cpu
    kind = p.draw(st.sampled_from(["slice", "transpose", "permute", "select", "unsqueeze",
                                   "expand", "view", "reshape", "as_strided", "diagonal",
                                   "unfold", "squeeze", "t", "split", "movedim", "flatten",
                                   "alias"]), label="view")
    if t.dim() == 0 and kind not in ("unsqueeze", "view", "reshape", "as_strided", "expand",
                                     "alias", "squeeze", "flatten", "t"):
        kind = "unsqueeze"
    if kind == "slice":
        d = dims(p, t)
        n = t.shape[d]
        start = p.draw(st.integers(-n - 1, n + 1))
        stop = p.draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
        step = p.draw(st.integers(1, 3))
        index = (slice(None),) * (d % t.dim()) + (slice(start, stop, step),)
        return p.run(f"{{}}[{index}]", lambda x: x[index], a, result="view")
    if kind == "transpose":
        d0, d1 = dims(p, t), dims(p, t)
        return p.run(f"{{}}.transpose({d0}, {d1})", lambda x: x.transpose(d0, d1), a,
                     result="view")
    if kind == "permute":
        perm = p.draw(st.permutations(range(t.dim())))
        return p.run(f"{{}}.permute({perm})", lambda x: x.permute(*perm), a, result="view")
    if kind == "select":
        d = dims(p, t)
        i = p.draw(st.integers(-t.shape[d] - 1, t.shape[d]))
        return p.run(f"{{}}.select({d}, {i})", lambda x: x.select(d, i), a, result="view")
    if kind == "unsqueeze":
        d = p.draw(st.integers(-t.dim() - 1, t.dim()))
        return p.run(f"{{}}.unsqueeze({d})", lambda x: x.unsqueeze(d), a, result="view")
    if kind == "squeeze":
        if t.dim() and p.draw(st.booleans()):
            d = dims(p, t)
            return p.run(f"{{}}.squeeze({d})", lambda x: x.squeeze(d), a, result="view")
        return p.run("{}.squeeze()", lambda x: x.squeeze(), a, result="view")
    if kind == "t":
        return p.run("{}.t()", lambda x: x.t(), a, result="view")
    if kind == "expand":
        lead = p.draw(st.lists(st.integers(1, 3), max_size=1))
        sizes = lead + [p.draw(st.sampled_from([n, -1] if n != 1 else [1, 2, 3]))
                        for n in t.shape]
        return p.run(f"{{}}.expand({sizes})", lambda x: x.expand(*sizes), a, result="view")
    if kind in ("view", "reshape"):
        shape = draw_shape_for(p, t.numel())
        fn = (lambda x: x.view(shape)) if kind == "view" else (lambda x: x.reshape(shape))
        return p.run(f"{{}}.{kind}({shape})", fn, a, result="view")
    if kind == "flatten":
        if t.dim() > 1:
            s = p.draw(st.integers(0, t.dim() - 1))
            e = p.draw(st.integers(s, t.dim() - 1))
        else:
            s, e = 0, -1
        return p.run(f"{{}}.flatten({s}, {e})", lambda x: x.flatten(s, e), a, result="view")
    if kind == "as_strided":
        n = t.storage().size()
        rank = p.draw(st.integers(0, 3))
        sizes = [p.draw(st.integers(0, 4)) for _ in range(rank)]
        strides = [p.draw(st.integers(0, 6)) for _ in range(rank)]
        extent = sum((s - 1) * st_ for s, st_ in zip(sizes, strides) if s > 0)
        if any(s == 0 for s in sizes):
            extent = 0
        offset = p.draw(st.integers(0, max(0, n - 1 - extent))) if n else 0
        if p.draw(st.integers(0, 9)) == 0:
            offset = n  # out of bounds unless empty: both devices must raise
        return p.run(f"{{}}.as_strided({sizes}, {strides}, {offset})",
                     lambda x: x.as_strided(sizes, strides, offset), a, result="view")
    if kind == "diagonal":
        if t.dim() < 2:
            return None
        off = p.draw(st.integers(-3, 3))
        d0, d1 = dims(p, t), dims(p, t)
        return p.run(f"{{}}.diagonal({off}, {d0}, {d1})", lambda x: x.diagonal(off, d0, d1),
                     a, result="view")
    if kind == "unfold":
        d = dims(p, t)
        size = p.draw(st.integers(1, 3))
        step = p.draw(st.integers(1, 3))
        return p.run(f"{{}}.unfold({d}, {size}, {step})", lambda x: x.unfold(d, size, step),
                     a, result="view")
    if kind == "split":
        d = dims(p, t)
        k = p.draw(st.integers(1, 3))
        return p.run(f"{{}}.split({k}, {d})[?]", lambda x: x.split(k, d), a, result="view")
    if kind == "movedim":
        d0, d1 = dims(p, t), dims(p, t)
        return p.run(f"{{}}.movedim({d0}, {d1})", lambda x: x.movedim(d0, d1), a,
                     result="view")
    return p.run("{}.detach()", lambda x: x.detach(), a, result="view")


def draw_shape_for(p, numel):
    """A shape with `numel` elements (usually), with a -1 now and then."""
    factors = [f for f in range(1, numel + 1) if numel % f == 0] if numel else [0]
    shape, left = [], numel
    for _ in range(p.draw(st.integers(0, 3))):
        if left == 0:
            break
        f = p.draw(st.sampled_from([f for f in factors if left % f == 0]))
        shape.append(f)
        left //= f
    shape.append(left)
    if p.draw(st.integers(0, 4)) == 0:
        shape[p.draw(st.integers(0, len(shape) - 1))] = -1
    if p.draw(st.integers(0, 9)) == 0:
        shape[0] += 1  # a bad shape: both devices must raise
    return tuple(shape)


def broadcast_shape(p, shape):
    """A shape that broadcasts to `shape`."""
    out = [n if p.draw(st.booleans()) else 1 for n in shape]
    drop = p.draw(st.integers(0, len(out)))
    return tuple(out[drop:])


def fresh_operand(p, shape):
    """A new tensor of a shape broadcastable to `shape`, made on CPU and copied to Loom."""
    dtype = p.draw(st.sampled_from(DTYPES), label="operand dtype")
    s = broadcast_shape(p, shape)
    c = make_base((torch.Size(s).numel(),), dtype, p.draw(st.integers(0, 3))).view(s)
    return Pair(c, c.to(D), f"const{list(s)}:{str(dtype)[6:]}")


def operand(p, target):
    """A pool tensor that does not share target's storage, or a fresh one."""
    others = [q for q in p.pool
              if q.cpu.storage().data_ptr() != target.cpu.storage().data_ptr()]
    if others and p.draw(st.booleans()):
        return others[p.draw(st.integers(0, len(others) - 1))]
    return fresh_operand(p, target.cpu.shape)


def step_write(p):
    a = p.pick()
    overlap = internal_overlap(a.cpu)
    kind = p.draw(st.sampled_from(["inplace_scalar", "inplace_tensor", "copy_", "copy_cpu",
                                   "fill_", "zero_", "setitem", "out", "inplace_view"]),
                  label="write")
    if overlap == 2 and kind not in ("fill_", "zero_", "inplace_view"):
        kind = "fill_"  # CPU's result is undefined for the others
    if kind == "inplace_scalar":
        op = p.draw(st.sampled_from(["add_", "sub_", "mul_", "div_", "neg_", "abs_",
                                     "clamp_", "remainder_"]))
        s = p.draw(st.sampled_from(SCALARS))
        if a.cpu.dtype == torch.bool and op in ("abs_", "remainder_"):
            return None  # CPU has no bool kernels for these; Loom computes them
        if op in ("neg_", "abs_"):
            return p.run(f"{{}}.{op}()", lambda x: getattr(x, op)(), a)
        if op == "clamp_":
            return p.run(f"{{}}.clamp_({s}, {s} + 4)", lambda x: x.clamp_(s, s + 4), a)
        if op == "mul_" and s not in (-1, 0, True):
            s = -1  # keep integers from overflowing over a long program
        if op in ("div_", "remainder_") and s in (0, True):
            s = 3  # no infinities or NaNs, whose casts to integers C leaves undefined
        return p.run(f"{{}}.{op}({s})", lambda x: getattr(x, op)(s), a)
    if kind == "inplace_tensor":
        b = operand(p, a)
        op = p.draw(st.sampled_from(["add_", "sub_", "mul_", "maximum", "clamp_"]))
        if op == "maximum":
            if not broadcasts_to(b.cpu.shape, a.cpu.shape):
                return None  # test_view_writes.py::test_out_that_is_an_input_is_not_resized
            return p.run("torch.maximum({0}, {1}, out={0})",
                         lambda x, y: torch.maximum(x, y, out=x), a, b)
        if op == "clamp_":
            return p.run("{}.clamp_(min={})", lambda x, y: x.clamp_(min=y), a, b)
        if op == "mul_":
            return p.run("{}.mul_({}.clamp(-1, 1))", lambda x, y: x.mul_(y.clamp(-1, 1)), a, b)
        return p.run(f"{{}}.{op}({{}})", lambda x, y: getattr(x, op)(y), a, b)
    if kind == "copy_":
        b = p.pick("source")  # may alias a: CPU rejects partial overlap, so must Loom
        if undefined_overlap(a.cpu, b.cpu) or undefined_cast(b.cpu, a.cpu.dtype):
            return None
        return p.run("{}.copy_({})", lambda x, y: x.copy_(y), a, b)
    if kind == "copy_cpu":
        b = fresh_operand(p, a.cpu.shape)
        if undefined_cast(b.cpu, a.cpu.dtype):
            return None
        note(f"from CPU: {b.name}")
        return p.run("{}.copy_(<cpu>)", lambda x: x.copy_(b.cpu), a)
    if kind == "fill_":
        s = p.draw(st.sampled_from(SCALARS))
        if scalar_overflows(s, a.cpu.dtype):
            return None
        return p.run(f"{{}}.fill_({s})", lambda x: x.fill_(s), a)
    if kind == "zero_":
        return p.run("{}.zero_()", lambda x: x.zero_(), a)
    if kind == "setitem":
        index = draw_index(p, a.cpu)
        if p.draw(st.booleans()):
            s = p.draw(st.sampled_from(SCALARS))
            if scalar_overflows(s, a.cpu.dtype) or overlapping_target(a.cpu, index):
                return None
            return p.run(f"{{}}[{index}] = {s}", lambda x: x.__setitem__(index, s), a)
        try:
            shape = a.cpu[index].shape
        except Exception:  # noqa: BLE001
            shape = ()
        b = operand(p, a)
        if p.draw(st.booleans()):
            b = fresh_operand(p, shape)
        if undefined_cast(b.cpu, a.cpu.dtype) or (b.cpu.dim() == 0
                                                  and overlapping_target(a.cpu, index)):
            return None
        return p.run(f"{{}}[{index}] = {{}}", lambda x, y: x.__setitem__(index, y), a, b)
    if kind == "out":
        b = operand(p, a)
        op = p.draw(st.sampled_from(["add", "mul", "neg", "where"]))
        if op == "neg":
            return p.run("torch.neg({1}, out={0})", lambda x, y: torch.neg(y, out=x), a, b)
        if op == "where":
            if a.cpu.shape != b.cpu.shape or a.cpu.dtype != b.cpu.dtype:
                # CPU trips an internal assert on mixed dtypes; Loom does not resize like
                # CPU (test_view_writes.py::test_where_out_resizes_like_cpu).
                return None
            return p.run("torch.where({1} > 0, {1}, 2, out={0})",
                         lambda x, y: torch.where(y > 0, y, torch.tensor(2, dtype=y.dtype,
                                                                         device=y.device),
                                                  out=x), a, b)
        return p.run(f"torch.{op}({{1}}, 1, out={{0}})",
                     lambda x, y: getattr(torch, op)(y, 1, out=x), a, b)
    # in-place view ops change the pool tensor itself
    op = p.draw(st.sampled_from(["unsqueeze_", "squeeze_", "transpose_", "t_", "as_strided_"]))
    if op == "unsqueeze_":
        d = p.draw(st.integers(-a.cpu.dim() - 1, a.cpu.dim()))
        return p.run(f"{{}}.unsqueeze_({d})", lambda x: x.unsqueeze_(d), a)
    if op == "squeeze_":
        return p.run("{}.squeeze_()", lambda x: x.squeeze_(), a)
    if op == "transpose_":
        d0, d1 = dims(p, a.cpu), dims(p, a.cpu)
        return p.run(f"{{}}.transpose_({d0}, {d1})", lambda x: x.transpose_(d0, d1), a)
    if op == "t_":
        return p.run("{}.t_()", lambda x: x.t_(), a)
    n = a.cpu.numel()
    if n == 0 or internal_overlap(a.cpu) or not a.cpu.is_contiguous():
        return None
    shape = draw_shape_for(p, n)
    if -1 in shape or torch.Size(shape).numel() != n:
        return None
    strides = torch.empty(shape).stride()
    off = a.cpu.storage_offset()
    return p.run(f"{{}}.as_strided_({shape}, {strides}, {off})",
                 lambda x: x.as_strided_(shape, strides, off), a)


def broadcasts_to(shape, target):
    try:
        return torch.broadcast_shapes(shape, target) == target
    except RuntimeError:
        return False


def overlapping_target(t, index):
    """Setitem of a scalar or a 0-dim tensor fills on CPU; on other devices (CUDA too) the
    value is a device tensor that setitem copies, which rejects an overlapping target
    (test_view_writes.py::test_setitem_scalar_into_overlapping_view)."""
    try:
        return internal_overlap(t[index]) != 0
    except Exception:  # noqa: BLE001
        return False


def scalar_overflows(s, dtype):
    """A float scalar out of an integer dtype's range: CPU's fill_ raises, Loom's does not
    (test_view_writes.py::test_fill_overflow_raises_like_cpu)."""
    if not isinstance(s, float) or dtype.is_floating_point or dtype == torch.bool:
        return False
    info = torch.iinfo(dtype)
    return not info.min <= s <= info.max


def draw_index(p, t):
    parts = []
    for _ in range(p.draw(st.integers(1, max(1, t.dim())))):
        k = p.draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        if k == "int":
            parts.append(p.draw(st.integers(-3, 3)))
        elif k == "slice":
            parts.append(slice(p.draw(st.one_of(st.none(), st.integers(-4, 4))),
                               p.draw(st.one_of(st.none(), st.integers(-4, 4))),
                               p.draw(st.sampled_from([None, 1, 2, 3]))))
        elif k == "none":
            parts.append(None)
        elif Ellipsis not in parts:
            parts.append(Ellipsis)
    return tuple(parts)


def step_read(p):
    a = p.pick()
    kind = p.draw(st.sampled_from(["add", "mul_tensor", "neg", "cmp", "cast", "sum",
                                   "sum_dim", "amax", "clone", "contiguous", "where"]),
                  label="read")
    if kind == "add":
        s = p.draw(st.sampled_from(SCALARS))
        return p.run(f"{{}} + {s}", lambda x: x + s, a, result="value")
    if kind == "mul_tensor":
        b = p.pick("other")
        return p.run("{} * {}", lambda x, y: x * y, a, b, result="value")
    if kind == "neg":
        return p.run("-{}", lambda x: -x, a, result="value")
    if kind == "cmp":
        return p.run("{} > 0", lambda x: x > 0, a, result="value")
    if kind == "cast":
        dtype = p.draw(st.sampled_from(DTYPES))
        if undefined_cast(a.cpu, dtype):
            return None
        return p.run(f"{{}}.to({dtype})", lambda x: x.to(dtype), a, result="value")
    if kind == "sum":
        return p.run("{}.sum()", lambda x: x.sum(), a, result="value")
    if kind == "sum_dim":
        d = dims(p, a.cpu)
        keep = p.draw(st.booleans())
        return p.run(f"{{}}.sum({d}, keepdim={keep})", lambda x: x.sum(d, keepdim=keep), a,
                     result="value")
    if kind == "amax":
        d = dims(p, a.cpu)
        return p.run(f"{{}}.amax({d})", lambda x: x.amax(d), a, result="value")
    if kind == "clone":
        return p.run("{}.clone()", lambda x: x.clone(), a, result="value")
    if kind == "contiguous":
        return p.run("{}.contiguous()", lambda x: x.contiguous(), a, result="view")
    b = p.pick("other")
    if 1 in a.cpu.shape or 1 in b.cpu.shape:
        return None  # test_views.py::test_where_result_strides_on_unfold_view
    return p.run("torch.where({0} > 0, {0}, {1})", lambda x, y: torch.where(x > 0, x, y), a, b,
                 result="value")


STEPS = [step_view] * 4 + [step_write] * 4 + [step_read] * 2


def run_program(data):
    p = Program(data)
    for i in range(data.draw(st.integers(1, 3), label="bases")):
        shape = data.draw(st.sampled_from(SHAPES), label="shape")
        dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
        c = make_base(shape, dtype, i)
        how = f"base {list(shape)} {dtype}"
        if data.draw(st.booleans(), label="realized"):
            p.add(c.clone(), c.to(D), how + " (copied in)")
        else:  # a lazy value, never realized before the program runs
            p.add(c.clone(), (torch.zeros(shape, dtype=dtype, device=D) + c.to(D)), how)
    for _ in range(data.draw(st.integers(1, MAX_STEPS), label="steps")):
        step = data.draw(st.sampled_from(STEPS), label="step")
        step(p)
        if data.draw(st.integers(0, 5), label="check now") == 0:
            p.check_all()
    p.check_all()


test_random_programs = pytest.mark.filterwarnings(
    "ignore:An output with one or more elements was resized")(fuzz_test(run_program, 500))


def test_fuzz_helpers_catch_a_mismatch():
    """The comparisons themselves: a wrong value or layout is reported."""
    c = torch.arange(6.0).view(2, 3)
    with pytest.raises(Mismatch, match="values differ"):
        check_values(torch.zeros(2, 3, device=D), c, "x")
    with pytest.raises(Mismatch, match="layout"):
        check_meta(torch.zeros(3, 2, device=D).t(), c, "x")
