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

    class device:  # noqa: N801  (torch.cuda.device's name): `with torch.loom.device(0):`
        def __init__(self, d):
            if d is not None and not (isinstance(d, int) and d in (0, -1)):
                set_device(d)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    m.device = device
    m.is_initialized = lambda: True
    m._is_in_bad_fork = lambda: False

    # Loom's random ops take their seeds from the CPU's default generator, so seeding Loom
    # seeds that one (torch 2.x's manual_seed calls the renamed backend's manual_seed_all).
    def manual_seed(seed):
        torch.default_generator.manual_seed(int(seed))

    m.manual_seed = m.manual_seed_all = manual_seed
    m.initial_seed = lambda: torch.default_generator.initial_seed()
    return m


if _HAS_RENAME:
    torch.utils.rename_privateuse1_backend("loom")
    torch._register_device_module("loom", _device_module())
    torch.utils.generate_methods_for_privateuse1_backend()
    device = torch.device("loom", 0)
else:
    torch._register_device_module("privateuseone", _device_module())
    device = torch.device("privateuseone", 0)



def _python_rejects_loom_storages():
    source = torch.empty(0, device=device)
    untyped = getattr(source, "untyped_storage", None)  # torch >= 2.0: no TypedStorage warning
    try:
        torch.empty(0, device=device).set_(untyped() if untyped else source.storage())
    except RuntimeError as e:
        if "Invalid device for storage" in str(e):
            return True
        raise
    return False


def _install_set_storage():
    """Routes Tensor.set_(Loom storage, ...) past torch's Python binding, which rejects it.

    A meta stand-in of the call runs torch's own argument parsing and checks first, so that
    bad arguments get torch's messages. Every other call goes to the original method.
    """
    original = torch.Tensor.set_
    storage_types = (torch.TypedStorage, torch.UntypedStorage)

    def set_(self, *args, **kwargs):
        source = args[0] if args else kwargs.get("source")
        if not isinstance(source, storage_types) or source.device.type != device.type:
            return original(self, *args, **kwargs)
        typed = isinstance(source, torch.TypedStorage)
        stand_in = torch.empty(0, dtype=source.dtype if typed else torch.uint8, device="meta")
        stand_in = stand_in.storage() if typed else stand_in.storage()._storage
        if args:
            args = (stand_in,) + args[1:]
        else:
            kwargs = dict(kwargs, source=stand_in)
        original(torch.empty(0, dtype=self.dtype, device="meta"), *args, **kwargs)
        offset, size, stride = _bind(*args, **kwargs)
        _loom._set_storage(self, source._storage if typed else source, offset, size, stride)
        return self

    def _bind(source, storage_offset=None, size=None, stride=()):
        return storage_offset, None if size is None else list(size), list(stride)

    set_.__doc__ = original.__doc__
    torch.Tensor.set_ = set_


def _install_legacy_new():
    """Gives Loom tensors torch's legacy constructor, Tensor.new(...), which 1.13 refuses
    for PrivateUse1 ("new(): expected key in DispatchKeySet").

    The call runs first on an empty CPU tensor of the same dtype, so that argument parsing
    and its errors are torch's own; the result is then made on Loom: an empty tensor for
    the sizes forms (`new()`, `new(2, 3)`, `new(torch.Size)`), the data for the others,
    an alias for `new(loom_tensor)` and a view of the storage for `new(storage)`.
    """
    original = torch.Tensor.new
    storage_types = (torch.TypedStorage, torch.UntypedStorage)

    def new(self, *args, **kwargs):
        if self.device.type != device.type:
            return original(self, *args, **kwargs)
        if "device" in kwargs:
            asked = torch.device(kwargs.pop("device"))
            if asked.type != device.type:
                raise RuntimeError(f"legacy constructor expects device type: {device.type} "
                                   f"but device type: {asked.type} was passed")
        stand_in = torch.empty(0, dtype=self.dtype)
        if len(args) == 1 and not kwargs and isinstance(args[0], storage_types):
            return torch.empty(0, dtype=self.dtype, device=device).set_(args[0])
        if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor):
            other = args[0]
            if other.device == self.device and other.dtype == self.dtype:
                return torch.ops.aten.alias(other)
            return original(stand_in, other.to("meta") if other.device.type == device.type
                            else other)  # raises torch's TypeError for the mismatch
        on_cpu = original(stand_in, *args, **kwargs)
        sizes_form = all(isinstance(a, int) for a in args) or (
            len(args) == 1 and isinstance(args[0], torch.Size))
        if sizes_form:
            return torch.empty(on_cpu.shape, dtype=self.dtype, device=device)
        return on_cpu.to(device)

    new.__doc__ = original.__doc__
    torch.Tensor.new = new


def _python_rejects_legacy_new():
    try:
        torch.empty(0, device=device).new(0)
    except (RuntimeError, TypeError) as e:
        if "expected key in DispatchKeySet" in str(e) or "new()" in str(e):
            return True
        raise
    return False


if _python_rejects_loom_storages():
    _install_set_storage()
if _python_rejects_legacy_new():
    _install_legacy_new()
if _TORCH_VERSION < (2, 0):  # the storage layer that knows no PrivateUse1 storages
    from . import _storage
    _storage.install(device)

__all__ = ["device", "sync", "metrics", "reset_metrics"]
