// The device guard of PrivateUse1: one device, index 0, whose only stream is the default
// one (realization is synchronous, so there is nothing to order).
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "aten/tensor_util.h"

namespace loom::aten {
namespace {

struct LoomGuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kLoomDeviceType; }

  c10::Device exchangeDevice(c10::Device d) const override {
    check(d);
    return c10::Device(kLoomDeviceType, 0);
  }
  c10::Device getDevice() const override { return c10::Device(kLoomDeviceType, 0); }
  void setDevice(c10::Device d) const override { check(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}

  c10::Stream getStream(c10::Device d) const noexcept override { return default_stream(); }
  c10::Stream getDefaultStream(c10::Device) const override { return default_stream(); }
  c10::Stream getStreamFromGlobalPool(c10::Device, bool) const override { return default_stream(); }
  c10::Stream exchangeStream(c10::Stream) const noexcept override { return default_stream(); }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}

  c10::DeviceIndex deviceCount() const noexcept override { return 1; }

 private:
  static c10::Stream default_stream() {
    return c10::Stream(c10::Stream::DEFAULT, c10::Device(kLoomDeviceType, 0));
  }
  static void check(c10::Device d) {
    TORCH_CHECK(d.type() == kLoomDeviceType, "expected a Loom device, got ", d);
    TORCH_CHECK(!d.has_index() || d.index() == 0, "Loom has one device (index 0), got ", d);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, LoomGuardImpl);

}  // namespace
}  // namespace loom::aten
