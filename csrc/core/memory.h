// Realized memory of a storage, from a caching allocator: freed blocks are kept by size
// class and handed out again, since fresh pages cost ~22 ms per 64 MiB here.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace loom {

struct Memory {
  void* data = nullptr;
  size_t nbytes = 0;
  size_t capacity = 0;
  // The executor's task that last wrote the memory (NOTE [Asynchronous execution] in
  // runtime/executor.h); the host reads it once that task has finished.
  uint64_t written_by = 0;
  bool owned = true;  // false: borrowed (borrow_memory), not given back by the destructor
  ~Memory();
};

// The executor's tasks, numbered from 1 as the host issues them; the executor finishes
// them in that order. A block freed while some issued task is unfinished (a kernel may
// still read or write it) is handed out again only after that task has finished.
struct TaskCounters {
  std::atomic<uint64_t> issued{0}, finished{0};
};
TaskCounters& task_counters();

// Returns once the task that last wrote `m` has finished: host code reading realized
// memory in place calls it first. The runtime installs the wait (set_await_hook).
void await_writes(const Memory& m);
void set_await_hook(void (*await_task)(uint64_t task));

std::shared_ptr<Memory> allocate_memory(size_t nbytes);
// The same bytes as `m`, not owned: an executor's task reads and writes through it while
// the graph alone keeps the block alive (freed meanwhile, it waits out the task in the
// quarantine below), so what is live does not depend on the queue.
std::shared_ptr<Memory> borrow_memory(const Memory& m);
// Releases every cached block back to the system.
void empty_memory_cache();

struct MemoryStats {
  int64_t live_blocks, live_bytes, cached_bytes, peak_bytes;
};
MemoryStats memory_stats();

}  // namespace loom
