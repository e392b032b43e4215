"""torch 1.13's Python storage layer, taught about Loom storages.

That layer copies storages through constructors and `copy_` calls that know only CPU,
CUDA and meta storages, so `storage.cpu()`, `storage.clone()`, `copy.deepcopy(tensor)`,
`torch.save` and `pickle` fail for PrivateUse1. Here a Loom storage is read and copied
as a uint8 Loom tensor over all of its bytes, which the device handles like any other
tensor (pending writes included). Only Loom storages take these paths.
"""
import torch
import torch.serialization

from . import _loom


def _is_loom(storage, device):
    return storage.device.type == device.type


def _bytes_of(untyped, device):
    """A uint8 Loom tensor over every byte of an untyped Loom storage."""
    t = torch.empty(0, dtype=torch.uint8, device=device)
    _loom._set_storage(t, untyped, 0, [untyped.nbytes()], [1])
    return t


def install(device):
    untyped = torch.UntypedStorage
    original_cpu, original_clone = untyped.cpu, untyped.clone

    def cpu(self):
        if not _is_loom(self, device):
            return original_cpu(self)
        return _bytes_of(self, device).cpu().storage()._storage

    def clone(self):
        if not _is_loom(self, device):
            return original_clone(self)
        return _bytes_of(self, device).clone().storage()._storage

    cpu.__doc__, clone.__doc__ = original_cpu.__doc__, original_clone.__doc__
    untyped.cpu, untyped.clone = cpu, clone

    # torch.save tags each storage with its location and writes storage.cpu()'s bytes;
    # torch.load gives the tag back with a CPU storage to move.
    def tag(storage):
        if _is_loom(storage, device):
            return str(storage.device)
        return None

    def restore(storage, location):
        if not location.startswith(device.type):
            return None
        on_loom = torch.empty(0, dtype=torch.uint8).set_(storage).to(device)
        return on_loom.storage()._storage

    torch.serialization.register_package(30, tag, restore)

    # pickle.dumps(tensor) pickles its storage through the legacy torch.save path, which
    # reads the bytes in place; a Loom storage pickles as its CPU copy and its device.
    for cls in (torch.UntypedStorage, torch.TypedStorage):
        cls.__reduce__ = _reducer(cls.__reduce__, device)


def _reducer(original, device):
    def __reduce__(self):
        if not _is_loom(self, device):
            return original(self)
        return (_rebuild_storage, (self.cpu(), str(self.device)))

    return __reduce__


def _rebuild_storage(on_cpu, device):
    """Unpickles a Loom storage from its CPU copy."""
    typed = isinstance(on_cpu, torch.TypedStorage)
    untyped = on_cpu._storage if typed else on_cpu
    moved = torch.empty(0, dtype=torch.uint8).set_(untyped).to(device).storage()._storage
    return torch.TypedStorage(wrap_storage=moved, dtype=on_cpu.dtype) if typed else moved
