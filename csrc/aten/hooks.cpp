// PrivateUse1's hooks, which torch 2.x asks of a renamed backend: once "loom" is registered
// it is the accelerator that autograd's engine queries for its current streams
// (hasPrimaryContext), and storages resize through the hooks. torch 1.13 has none.
#if __has_include(<ATen/detail/PrivateUse1HooksInterface.h>)
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "aten/tensor_util.h"

namespace loom::aten {
namespace {

struct LoomHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const { return true; }
  bool isAvailable() const { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  // Loom's random ops take their seeds from the CPU's default generator (ops_factory.cpp),
  // so that torch.manual_seed seeds them.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  at::Device getDeviceFromPtr(void*) const override { return c10::Device(kLoomDeviceType, 0); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    resize_storage_bytes(storage, nbytes);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new LoomHooks()); }
} g_register_hooks;

}  // namespace
}  // namespace loom::aten
#endif
