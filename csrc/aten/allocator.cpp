// The PrivateUse1 allocator: every storage gets a fresh loom::Buffer as its DataPtr
// context. The data pointer is the Buffer too; it is opaque, since PyTorch never
// dereferences PrivateUse1 memory, and non-null even for zero bytes so that PyTorch's
// "storage not allocated" checks pass.
#include <c10/core/Allocator.h>

#include <utility>

#include "aten/tensor_util.h"

namespace loom::aten {
namespace {

void delete_buffer(void* ctx) {
  EngineLock g(engine_mutex());
  delete static_cast<Buffer*>(ctx);
}

// Releases differ: allocate() is const in 1.13 and not in later ones, which also ask for
// copy_data (storage clones). Both forms are defined without `override`, so that whichever
// the release declares is overridden and no release number is guessed.
struct LoomAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) const {
    EngineLock g(engine_mutex());
    auto* b = new Buffer(int64_t(nbytes));
    return {b, b, &delete_buffer, c10::Device(kLoomDeviceType, 0)};
  }
  c10::DataPtr allocate(size_t nbytes) { return std::as_const(*this).allocate(nbytes); }
  c10::DeleterFnPtr raw_deleter() const override { return &delete_buffer; }

  // The data pointers are the Buffers: the first `count` bytes of dest take src's value,
  // lazily, as copy_ would store them.
  void copy_data(void* dest, const void* src, size_t count) const {
    copy_bytes(*static_cast<Buffer*>(dest), *static_cast<const Buffer*>(src), int64_t(count));
  }
};

LoomAllocator g_allocator;

// Runs when the extension is loaded, before any Loom tensor can exist.
struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(kLoomDeviceType, &g_allocator); }
} g_register_allocator;

}  // namespace

c10::Allocator* loom_allocator() { return &g_allocator; }

bool is_loom_data_ptr(const c10::DataPtr& ptr) {
  return ptr.get_deleter() == &delete_buffer && ptr.get_context() != nullptr;
}

}  // namespace loom::aten
