"""Loom as a device type for PyTorch's device-generic tests.

Point ``TORCH_TEST_DEVICES`` at this file and set ``PYTORCH_TESTING_DEVICE_ONLY_FOR`` to
``loom.device.type``; ``instantiate_device_type_tests`` then makes a ``...PRIVATEUSEONE``
class of every generic test class (see ``tests/upstream/run.py``). PyTorch runs this file
with ``runpy.run_path`` while ``common_device_type`` is being imported, with that module's
globals, so ``DeviceTypeTestBase`` is already defined.
"""
import sys

import torch

import loom

try:
    DeviceTypeTestBase  # noqa: B018  (given by runpy.run_path's init_globals)
except NameError:
    from torch.testing._internal.common_device_type import DeviceTypeTestBase

# NOTE: Loom counts as a native device. PyTorch skips tests marked onlyNativeDeviceTypes
# on other devices and, for them, does not check the message in assertRaisesRegex,
# because lazy backends such as XLA only approximate views and errors. Loom's tensors are
# the CPU's strided views and its errors are the CPU's (DESIGN.md invariant 1), so the
# view tests run and error messages are checked, as for the CPU.
for _name in ("torch.testing._internal.common_utils",
              "torch.testing._internal.common_device_type"):
    _mod = sys.modules.get(_name)
    if _mod is not None and loom.device.type not in _mod.NATIVE_DEVICES:
        _mod.NATIVE_DEVICES = tuple(_mod.NATIVE_DEVICES) + (loom.device.type,)


class LoomTestBase(DeviceTypeTestBase):
    device_type = loom.device.type

    @classmethod
    def get_primary_device(cls):
        return str(loom.device)

    # A RuntimeError in one test (a missing kernel, say) must not stop the others.
    def _should_stop_test_suite(self):
        return False


TEST_CLASS = LoomTestBase
