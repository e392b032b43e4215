// Realized memory of a storage, from a caching allocator: freed blocks are kept by size
// class and handed out again, since fresh pages cost ~22 ms per 64 MiB here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace loom {

struct Memory {
  void* data = nullptr;
  size_t nbytes = 0;
  size_t capacity = 0;
  ~Memory();
};

std::shared_ptr<Memory> allocate_memory(size_t nbytes);
// Releases every cached block back to the system.
void empty_memory_cache();

struct MemoryStats {
  int64_t live_blocks, live_bytes, cached_bytes, peak_bytes;
};
MemoryStats memory_stats();

}  // namespace loom
