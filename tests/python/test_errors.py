"""Bad input raises the CPU's exception, with the same first line of message (issue 6).

Each case builds its inputs on CPU, moves them to the device under test, runs the op and
reads every result back (so errors found only when a kernel runs count too), and records
the exception type and message. Loom must match CPU torch, and stay usable afterwards."""
import re

import pytest
import torch
import torch.nn.functional as F

import loom

D = loom.device


def z(*shape, dtype=torch.float32):
    return torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float64).reshape(
        shape).to(dtype)


def idx(*v):
    return torch.tensor(v, dtype=torch.int64)


# name -> (inputs built on CPU, op on the moved inputs)
CASES = {
    # views over storage
    "as_strided_beyond_storage": (lambda: [z(4)], lambda x: x.as_strided((3,), (2,))),
    "as_strided_offset_beyond": (lambda: [z(4)], lambda x: x.as_strided((2,), (1,), 3)),
    "as_strided_negative_stride": (lambda: [z(4)], lambda x: x.as_strided((2,), (-1,))),
    "view_incompatible_strides": (lambda: [z(4, 6)], lambda x: x.t().view(24)),
    "view_wrong_numel": (lambda: [z(4, 6)], lambda x: x.view(5, 5)),
    "view_two_inferred": (lambda: [z(4, 6)], lambda x: x.view(-1, -1)),
    "view_dtype_size": (lambda: [z(3)], lambda x: x.view(torch.float64)),
    "reshape_wrong_numel": (lambda: [z(4, 6)], lambda x: x.reshape(7, -1)),
    "narrow_past_end": (lambda: [z(3, 4)], lambda x: x.narrow(0, 2, 5)),
    "expand_non_singleton": (lambda: [z(3, 4)], lambda x: x.expand(2, 4)),
    "permute_duplicate": (lambda: [z(3, 4)], lambda x: x.permute(0, 0)),
    "t_of_3d": (lambda: [z(2, 3, 4)], lambda x: x.t()),
    "unfold_too_big": (lambda: [z(3)], lambda x: x.unfold(0, 5, 1)),
    # dims and integer indices
    "int_index_out_of_range": (lambda: [z(3)], lambda x: x[5]),
    "negative_index_out_of_range": (lambda: [z(3, 4)], lambda x: x[-4]),
    "second_dim_index": (lambda: [z(3, 4)], lambda x: x[:, 7]),
    "too_many_indices": (lambda: [z(3)], lambda x: x[0, 0]),
    "select_dim_out_of_range": (lambda: [z(3, 4)], lambda x: x.select(2, 0)),
    "transpose_dim_out_of_range": (lambda: [z(3, 4)], lambda x: x.transpose(0, 3)),
    "unsqueeze_dim_out_of_range": (lambda: [z(3, 4)], lambda x: x.unsqueeze(5)),
    "sum_dim_out_of_range": (lambda: [z(3, 4)], lambda x: x.sum(3)),
    "setitem_out_of_range": (lambda: [z(3)], lambda x: x.__setitem__(10, 1.0)),
    "bool_mask_shape": (lambda: [z(3)], lambda x: x[torch.tensor([True, False]).to(x.device)]),
    # indices known only when a kernel runs
    "tensor_index_out_of_range": (lambda: [z(3), idx(0, 5)], lambda x, i: x[i]),
    "index_select_out_of_range": (lambda: [z(3), idx(3)], lambda x, i: x.index_select(0, i)),
    "gather_out_of_range": (lambda: [z(2, 3), idx(0, 5).view(1, 2)],
                            lambda x, i: x.gather(1, i)),
    "scatter_out_of_range": (lambda: [z(3), idx(5)], lambda x, i: x.scatter(0, i, 1.0)),
    "index_put_out_of_range": (lambda: [z(3), idx(-4)],
                               lambda x, i: x.index_put_((i,), torch.ones((), device=x.device))),
    "embedding_out_of_range": (lambda: [z(4, 2), idx(1, 4)], lambda w, i: F.embedding(i, w)),
    "cross_entropy_target": (lambda: [z(2, 3), idx(0, 5)], lambda x, t: F.cross_entropy(x, t)),
    # shapes that do not fit
    "mm_shapes": (lambda: [z(2, 3), z(4, 5)], lambda a, b: torch.mm(a, b)),
    "mm_of_1d": (lambda: [z(3), z(3, 2)], lambda a, b: torch.mm(a, b)),
    "matmul_1d_sizes": (lambda: [z(3), z(4)], lambda a, b: torch.matmul(a, b)),
    "bmm_batches": (lambda: [z(2, 3, 4), z(3, 4, 5)], lambda a, b: torch.bmm(a, b)),
    "mm_dtypes": (lambda: [z(2, 3), z(3, 2, dtype=torch.float64)], lambda a, b: a @ b),
    "bmm_dtypes": (lambda: [z(1, 2, 3), z(1, 3, 2, dtype=torch.float64)], torch.bmm),
    "mv_dtypes": (lambda: [z(2, 3), z(3, dtype=torch.float64)], torch.mv),
    "dot_dtypes": (lambda: [z(3), z(3, dtype=torch.float64)], torch.dot),
    "conv_channels": (lambda: [z(1, 3, 8, 8), z(4, 2, 3, 3)], lambda x, w: F.conv2d(x, w)),
    "conv_kernel_too_big": (lambda: [z(1, 1, 2, 2), z(1, 1, 3, 3)], lambda x, w: F.conv2d(x, w)),
    "conv_rank": (lambda: [z(3, 8, 8, 1, 1), z(4, 3, 3, 3)], lambda x, w: F.conv2d(x, w)),
    "broadcast_sizes": (lambda: [z(2, 3), z(3, 2)], lambda a, b: a + b),
    "cat_sizes": (lambda: [z(2, 3), z(2, 4)], lambda a, b: torch.cat([a, b])),
    "where_condition_dtype": (lambda: [z(3), z(3)], lambda a, b: torch.where(a, a, b)),
    "masked_fill_shape": (lambda: [z(3, 4)],
                          lambda x: x.masked_fill_(torch.ones(4, 3, dtype=torch.bool,
                                                              device=x.device), 1.0)),
    "masked_fill_grows": (lambda: [z(3, 4)],
                          lambda x: x.masked_fill_(torch.ones(2, 3, 4, dtype=torch.bool,
                                                              device=x.device), 1.0)),
    "masked_fill_functional_shape": (lambda: [z(3, 4)],
                                     lambda x: x.masked_fill(torch.ones(4, 3, dtype=torch.bool,
                                                                        device=x.device), 1.0)),
    # results that cannot be cast into the written tensor
    "inplace_float_into_long": (lambda: [z(3, dtype=torch.int64)], lambda x: x.add_(1.5)),
    "inplace_tensor_float_into_long": (lambda: [z(3, dtype=torch.int64), z(3)],
                                       lambda x, y: x.mul_(y)),
    "inplace_long_into_bool": (lambda: [z(3, dtype=torch.bool)], lambda x: x.add_(1)),
    "inplace_sqrt_of_long": (lambda: [z(3, dtype=torch.int64)], lambda x: x.sqrt_()),
    "out_float_into_long": (lambda: [z(3), z(3), z(3, dtype=torch.int64)],
                            lambda a, b, o: torch.add(a, b, out=o)),
    "inplace_complex_into_float": (lambda: [z(3), z(3, dtype=torch.complex64)],
                                   lambda x, y: x.add_(y)),
    # writes into internally overlapping tensors
    "inplace_into_expanded": (lambda: [z(1)], lambda x: x.expand(3).add_(1)),
    "copy_into_expanded": (lambda: [z(1), z(3)], lambda x, y: x.expand(3).copy_(y)),
    "out_into_expanded": (lambda: [z(1), z(3)], lambda o, y: torch.mul(y, 2, out=o.expand(3))),
    "fill_into_stride0": (lambda: [z(2)], lambda x: x.as_strided((2, 2), (1, 0)).mul_(3)),
    "partial_overlap_input": (lambda: [z(5)], lambda x: x[1:].add_(x[:-1])),
    # dtypes an op does not take
    "neg_of_bool": (lambda: [z(3, dtype=torch.bool)], lambda x: -x),
    "sub_of_bools": (lambda: [z(3, dtype=torch.bool)] * 2, lambda a, b: a - b),
    "bitwise_not_of_float": (lambda: [z(3)], lambda x: x.bitwise_not()),
    "bitwise_and_of_float": (lambda: [z(3), z(3)], lambda a, b: a & b),
    "mean_of_long": (lambda: [z(3, dtype=torch.int64)], lambda x: x.mean()),
    "softmax_of_long": (lambda: [z(3, dtype=torch.int64)], lambda x: x.softmax(0)),
    "remainder_by_zero_long": (lambda: [z(3, dtype=torch.int64)], lambda x: x % 0),
    # integer division by a zero that is data: found by the kernel
    "floor_divide_by_zero_tensor": (lambda: [z(3, dtype=torch.int64)] * 2, lambda a, b: a // b),
    "fmod_by_zero_int8": (lambda: [z(3, dtype=torch.int8)] * 2, lambda a, b: torch.fmod(a, b)),
    "trunc_div_by_zero_int32": (lambda: [z(3, dtype=torch.int32)] * 2,
                                lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    "inplace_remainder_by_zero": (lambda: [z(3, dtype=torch.int16)] * 2, lambda a, b: a.remainder_(b)),
    "item_of_many": (lambda: [z(3)], lambda x: x.item()),
}

# Cases where Loom's message still differs from the CPU's (its type is checked all the same).
MESSAGE_DIFFERS = {}
# Cases Loom does not raise for yet.
NOT_RAISED = {}


def attempt(case, device):
    make, op = CASES[case]
    args = [a.to(device) for a in make()]
    try:
        out = op(*args)
        for t in (out if isinstance(out, (tuple, list)) else [out]):
            if isinstance(t, torch.Tensor):
                t.cpu()
        for a in args:
            a.cpu()
    except Exception as e:  # noqa: BLE001
        return type(e), first_line(str(e))
    return None, None


def first_line(msg):
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    # Device names in messages ("_cpu" kernels, "cpu" tensors) are the one expected difference.
    line = re.sub(r"_cpu\b", "", line)
    return re.sub(r"\b(cpu|CPU|privateuseone|PrivateUse1|loom)\b", "<dev>", line)


@pytest.mark.parametrize("case", [
    pytest.param(c, marks=pytest.mark.xfail(reason=NOT_RAISED[c], strict=True))
    if c in NOT_RAISED else c for c in sorted(CASES)])
def test_same_exception_as_cpu(case):
    cpu_type, cpu_msg = attempt(case, "cpu")
    assert cpu_type is not None, f"{case}: CPU torch accepts it; the case is wrong"
    loom_type, loom_msg = attempt(case, D)
    assert loom_type is cpu_type, (loom_type, loom_msg, cpu_msg)
    if case not in MESSAGE_DIFFERS:
        assert loom_msg == cpu_msg
    # The device still works.
    assert (torch.arange(4., device=D) * 2).sum().item() == 12.0
