"""Loom: a PyTorch device whose tensors are lazy.

Tensors on ``loom.device`` record graph nodes; generated kernels run when a value is
needed (``.cpu()``, ``.item()``, printing, ``loom.sync()``).
"""
import types

import torch  # must precede the extension, which links against torch's libraries

from . import _loom

_TORCH_VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
_HAS_RENAME = _TORCH_VERSION >= (2, 1) and hasattr(torch.utils, "rename_privateuse1_backend")

sync = _loom.sync
metrics = _loom.metrics
reset_metrics = _loom.reset_metrics


def _device_module():
    m = types.ModuleType("loom.device_module")
    m.is_available = lambda: True
    m.device_count = lambda: 1
    m.current_device = lambda: 0
    m.synchronize = lambda device=None: _loom.sync()

    def set_device(d):
        if torch.device(d).index not in (None, 0):
            raise RuntimeError(f"Loom has one device (index 0), got {d}")

    m.set_device = set_device
    m.is_initialized = lambda: True
    m._is_in_bad_fork = lambda: False
    return m


if _HAS_RENAME:
    torch.utils.rename_privateuse1_backend("loom")
    torch._register_device_module("loom", _device_module())
    torch.utils.generate_methods_for_privateuse1_backend()
    device = torch.device("loom", 0)
else:
    torch._register_device_module("privateuseone", _device_module())
    device = torch.device("privateuseone", 0)

__all__ = ["device", "sync", "metrics", "reset_metrics"]
