#include "core/memory.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#include "core/metrics.h"

namespace loom {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMaxCached = size_t(4) << 30;

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // capacity -> block
  size_t cached = 0;
  int64_t live_blocks = 0, live_bytes = 0, peak_bytes = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked: memory may be freed during exit
  return *c;
}

size_t round_capacity(size_t n) {
  if (n <= 4096) {
    size_t c = kAlign;
    while (c < n) c <<= 1;
    return c;
  }
  return (n + 4095) & ~size_t(4095);
}

}  // namespace

std::shared_ptr<Memory> allocate_memory(size_t nbytes) {
  auto& c = cache();
  auto m = std::make_shared<Memory>();
  m->nbytes = nbytes;
  size_t want = round_capacity(std::max<size_t>(nbytes, 1));
  {
    std::lock_guard<std::mutex> g(c.mu);
    // Reuse a cached block no more than twice the size asked for.
    auto it = c.free_blocks.lower_bound(want);
    if (it != c.free_blocks.end() && it->first <= 2 * want) {
      m->capacity = it->first;
      m->data = it->second;
      c.cached -= it->first;
      c.free_blocks.erase(it);
    }
  }
  if (!m->data) {
    m->data = std::aligned_alloc(kAlign, want);
    if (!m->data) {
      empty_memory_cache();
      m->data = std::aligned_alloc(kAlign, want);
      if (!m->data) throw std::bad_alloc();
    }
    m->capacity = want;
    metrics().buffers_allocated++;
    metrics().bytes_allocated += int64_t(want);
  }
  std::lock_guard<std::mutex> g(c.mu);
  c.live_blocks++;
  c.live_bytes += int64_t(m->capacity);
  c.peak_bytes = std::max(c.peak_bytes, c.live_bytes);
  return m;
}

Memory::~Memory() {
  if (!data) return;
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.live_blocks--;
  c.live_bytes -= int64_t(capacity);
  if (c.cached + capacity <= kMaxCached) {
    c.free_blocks.emplace(capacity, data);
    c.cached += capacity;
  } else {
    std::free(data);
  }
}

void empty_memory_cache() {
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  for (auto& [cap, p] : c.free_blocks) std::free(p);
  c.free_blocks.clear();
  c.cached = 0;
}

MemoryStats memory_stats() {
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  return {c.live_blocks, c.live_bytes, int64_t(c.cached), c.peak_bytes};
}

}  // namespace loom
