#include "core/memory.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <new>

#include <sys/mman.h>

#include "core/metrics.h"

namespace loom {

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kHugePage = size_t(2) << 20;
// The smallest block made of huge pages (NOTE [Huge pages]).
constexpr size_t kHugeBlock = 2 * kHugePage;
constexpr size_t kMaxCached = size_t(4) << 30;

struct Quarantined {
  uint64_t after;  // the last task issued when the block was freed
  size_t capacity;
  void* data;
};

struct Cache {
  std::mutex mu;
  std::multimap<size_t, void*> free_blocks;  // capacity -> block
  // Blocks freed while tasks were unfinished, in order of freeing (so of `after`).
  std::deque<Quarantined> quarantine;
  size_t cached = 0;
  int64_t live_blocks = 0, live_bytes = 0, peak_bytes = 0;
};

void (*g_await_task)(uint64_t) = nullptr;

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
  if (n >= kHugeBlock) return (n + kHugePage - 1) & ~(kHugePage - 1);
  return (n + 4095) & ~size_t(4095);
}

// NOTE [Huge pages]: a streamed kernel's time went partly to address translation: with
// 4 KB pages, 16M floats in and out cross 32K pages, and in this VM each TLB miss walks
// the guest's and the host's page tables. Blocks of kHugeBlock and more are aligned to
// 2 MB and marked for transparent huge pages (MADV_HUGEPAGE: this machine, like Debian's
// default, gives huge pages only where asked). Alternated in separate processes with
// caches flushed, six pairs: the 5-op chain 5.36 -> 4.30 ms, layer norm + GELU 2.70 ->
// 2.26, sum over dim 0 3.50 -> 3.20, softmax 5.42 -> 5.20, the triad 5.71 -> 5.52. Such
// a block's capacity rounds up to whole huge pages (4 MB and a byte take 6 MB; past 20 MB,
// under a tenth more). Where the kernel gives no huge pages, the advice is ignored and
// the block is an ordinary one.
void* new_block(size_t capacity) {
  if (capacity < kHugeBlock) return std::aligned_alloc(kAlign, capacity);
  void* p = std::aligned_alloc(kHugePage, capacity);
  if (p) madvise(p, capacity, MADV_HUGEPAGE);
  return p;
}

// Caches a freed block, or frees it past kMaxCached; c.mu held.
void keep_block(Cache& c, size_t capacity, void* data) {
  if (c.cached + capacity <= kMaxCached) {
    c.free_blocks.emplace(capacity, data);
    c.cached += capacity;
  } else {
    std::free(data);
  }
}

// Moves quarantined blocks whose tasks have finished to the cache; c.mu held.
void release_quarantine(Cache& c) {
  const uint64_t finished = task_counters().finished.load(std::memory_order_acquire);
  while (!c.quarantine.empty() && c.quarantine.front().after <= finished) {
    keep_block(c, c.quarantine.front().capacity, c.quarantine.front().data);
    c.quarantine.pop_front();
  }
}

}  // namespace

TaskCounters& task_counters() {
  static TaskCounters* t = new TaskCounters();  // leaked, as the cache
  return *t;
}

void await_writes(const Memory& m) {
  if (m.written_by > task_counters().finished.load(std::memory_order_acquire) && g_await_task)
    g_await_task(m.written_by);
}

void set_await_hook(void (*await_task)(uint64_t)) { g_await_task = await_task; }

std::shared_ptr<Memory> allocate_memory(size_t nbytes) {
  auto& c = cache();
  auto m = std::make_shared<Memory>();
  m->nbytes = nbytes;
  size_t want = round_capacity(std::max<size_t>(nbytes, 1));
  {
    std::lock_guard<std::mutex> g(c.mu);
    if (!c.quarantine.empty()) release_quarantine(c);
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
    m->data = new_block(want);
    if (!m->data) {
      empty_memory_cache();
      m->data = new_block(want);
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

std::shared_ptr<Memory> borrow_memory(const Memory& m) {
  auto b = std::make_shared<Memory>();
  b->data = m.data;
  b->nbytes = m.nbytes;
  b->capacity = m.capacity;
  b->owned = false;
  return b;
}

Memory::~Memory() {
  if (!data || !owned) return;
  auto& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.live_blocks--;
  c.live_bytes -= int64_t(capacity);
  const uint64_t issued = task_counters().issued.load(std::memory_order_acquire);
  if (issued > task_counters().finished.load(std::memory_order_acquire)) {
    c.quarantine.push_back({issued, capacity, data});
    return;
  }
  if (!c.quarantine.empty()) release_quarantine(c);
  keep_block(c, capacity, data);
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
