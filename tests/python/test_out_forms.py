"""out= forms of padding, interpolation and pooling (NOTE [Out forms by their functional op]):
values, sizes, strides and dtype errors against CPU torch, with no fallback."""
import re

import pytest
import torch

import loom

D = loom.device
A = torch.ops.aten


def sample(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g)


X3, X4, X5 = sample((2, 3, 7), 1), sample((2, 3, 6, 7), 2), sample((2, 3, 4, 6, 5), 3)
F, L = torch.float32, torch.long

CASES = {
    "upsample_nearest2d.out": (lambda d, o: A.upsample_nearest2d.out(X4.to(d), [9, 11], out=o[0]), [F]),
    "upsample_bilinear2d.out":
        (lambda d, o: A.upsample_bilinear2d.out(X4.to(d), [9, 11], True, out=o[0]), [F]),
    "upsample_bicubic2d.out":
        (lambda d, o: A.upsample_bicubic2d.out(X4.to(d), [9, 11], False, out=o[0]), [F]),
    "upsample_trilinear3d.out":
        (lambda d, o: A.upsample_trilinear3d.out(X5.to(d), [5, 7, 3], False, out=o[0]), [F]),
    "upsample_linear1d.out": (lambda d, o: A.upsample_linear1d.out(X3.to(d), [11], False, out=o[0]), [F]),
    "_upsample_bilinear2d_aa.out":
        (lambda d, o: A._upsample_bilinear2d_aa.out(X4.to(d), [3, 4], False, out=o[0]), [F]),
    "upsample_bilinear2d_backward.grad_input":
        (lambda d, o: A.upsample_bilinear2d_backward.grad_input(
            sample((2, 3, 9, 11), 4).to(d), [9, 11], [2, 3, 6, 7], True, grad_input=o[0]), [F]),
    "reflection_pad2d.out": (lambda d, o: A.reflection_pad2d.out(X4.to(d), [1, 2, 3, 1], out=o[0]), [F]),
    "replication_pad3d.out":
        (lambda d, o: A.replication_pad3d.out(X5.to(d), [1, 2, 3, 1, 0, 2], out=o[0]), [F]),
    "reflection_pad1d_backward.grad_input":
        (lambda d, o: A.reflection_pad1d_backward.grad_input(sample((2, 3, 10), 5).to(d), X3.to(d),
                                                             [1, 2], grad_input=o[0]), [F]),
    "max_pool2d_with_indices.out":
        (lambda d, o: A.max_pool2d_with_indices.out(X4.to(d), [2, 2], [2, 2], [0, 0], [1, 1], False,
                                                    out=o[0], indices=o[1]), [F, L]),
    "max_pool3d_with_indices.out":
        (lambda d, o: A.max_pool3d_with_indices.out(X5.to(d), [2, 2, 2], [2, 2, 2], [0, 0, 0],
                                                    [1, 1, 1], False, out=o[0], indices=o[1]), [F, L]),
    "avg_pool2d.out":
        (lambda d, o: A.avg_pool2d.out(X4.to(d), [2, 2], [1, 2], [1, 0], True, False, None,
                                       out=o[0]), [F]),
    "avg_pool3d.out":
        (lambda d, o: A.avg_pool3d.out(X5.to(d), [2, 2, 2], [1, 2, 1], [0, 0, 0], False, True, None,
                                       out=o[0]), [F]),
    "adaptive_avg_pool2d.out": (lambda d, o: A.adaptive_avg_pool2d.out(X4.to(d), [4, 3], out=o[0]), [F]),
    "adaptive_avg_pool3d.out":
        (lambda d, o: A.adaptive_avg_pool3d.out(X5.to(d), [2, 4, 3], out=o[0]), [F]),
    "adaptive_max_pool2d.out":
        (lambda d, o: A.adaptive_max_pool2d.out(X4.to(d), [4, 3], out=o[0], indices=o[1]), [F, L]),
    "adaptive_avg_pool3d_backward.grad_input":
        (lambda d, o: A.adaptive_avg_pool3d_backward.grad_input(sample((2, 3, 2, 4, 3), 6).to(d),
                                                                X5.to(d), grad_input=o[0]), [F]),
    "avg_pool2d_backward.grad_input":
        (lambda d, o: A.avg_pool2d_backward.grad_input(sample((2, 3, 3, 3), 7).to(d), X4.to(d),
                                                       [2, 2], [2, 2], [0, 0], False, True, None,
                                                       grad_input=o[0]), [F]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_form_matches_cpu(name):
    fn, dtypes = CASES[name]
    res = []
    for dev in ("cpu", D):
        outs = [torch.empty(0, dtype=t, device=dev) for t in dtypes]
        loom.reset_metrics()
        r = fn(dev, outs)
        for a, b in zip(r if isinstance(r, tuple) else (r,), outs):
            assert a is b  # the outs themselves are returned
        if dev != "cpu":
            assert loom.metrics()["fallbacks"] == {}
        res.append(outs)
    for want, got in zip(*res):
        assert got.shape == want.shape and got.stride() == want.stride()
        torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
    # An out of the wrong dtype raises the CPU's error.
    errs = []
    for dev in ("cpu", D):
        outs = [torch.empty(0, dtype=torch.float64 if t == F else torch.int32, device=dev)
                for t in dtypes]
        with pytest.raises(RuntimeError) as info:
            fn(dev, outs)
        errs.append(str(info.value))
    assert errs[0] == errs[1]


def test_out_form_keeps_strides_of_a_right_sized_out():
    for dev in ("cpu", D):
        out = torch.empty(2, 3, 9, 11, device=dev).transpose(2, 3).contiguous().transpose(2, 3)
        A.upsample_nearest2d.out(X4.to(dev), [9, 11], out=out)
        if dev == "cpu":
            want = out
    assert out.stride() == want.stride()
    torch.testing.assert_close(out.cpu(), want)


def test_every_pad_pool_upsample_out_form_has_a_kernel():
    missing = []
    for s in torch._C._jit_get_all_schemas():
        name = s.name + ("." + s.overload_name if s.overload_name else "")
        if not re.match(r"aten::_?(upsample|reflection_pad|replication_pad|\w*pool)", name):
            continue
        try:
            if (torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU")
                    and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1")
                    and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
                    and not torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd")):
                missing.append(name)
        except RuntimeError:
            pass
    assert missing == []
