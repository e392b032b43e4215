// Counters exposed as loom.metrics(), and LOOM_DEBUG.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace loom {

struct Metrics {
  std::atomic<int64_t> kernels_run{0}, kernels_compiled{0}, cache_hits{0}, disk_hits{0},
      realizations{0}, buffers_allocated{0}, bytes_allocated{0}, extern_calls{0};
  // Disk cache entries found damaged (failed their checksum) and recompiled.
  std::atomic<int64_t> disk_rejects{0};
  // Kernels unloaded to bound the loaded set (NOTE [Loaded kernels] in runtime/compiler.cpp).
  std::atomic<int64_t> kernels_unloaded{0};
  // Kernels compiled quickly first, then again optimized (NOTE [Compile tiers] in
  // runtime/compiler.cpp); each is one of kernels_compiled, once.
  std::atomic<int64_t> kernels_optimized{0};
  std::atomic<int64_t> compile_us{0};  // wall time spent in the C compiler
  std::atomic<int64_t> load_us{0};     // wall time spent loading kernels from the disk cache
  // Kernels run from a plan, without lowering (NOTE [Kernel plans] in runtime/plan.h).
  std::atomic<int64_t> plan_hits{0};
  // Values stored by a kernel beside its own output (NOTE [Cohorts] in schedule/fuse.cpp).
  std::atomic<int64_t> cohort_stores{0};
  std::atomic<int64_t> sibling_stores{0};  // NOTE [Sibling stores]
  std::atomic<int64_t> donated_stores{0};  // NOTE [Donated memory]
  // Stores computed into their old value's memory under superseded writes (NOTE
  // [Superseded bases] in schedule/reuse.cpp).
  std::atomic<int64_t> superseded_bases{0};
  // Kernels run that compute a reduction again for loops it does not depend on (NOTE
  // [Hoisted reductions] in codegen/kernel.h): the scheduler keeps such reductions out of
  // the kernels reading them, so any is a slow schedule.
  std::atomic<int64_t> reductions_recomputed{0};
  // Scatter kernels run in order on one thread: their rows may write one place (NOTE
  // [Parallel scatters] in codegen/render_scatter.cpp).
  std::atomic<int64_t> ordered_scatters{0};
  // Times the host waited for the executor's tasks, and for how long (NOTE [Asynchronous
  // execution] in runtime/executor.h).
  std::atomic<int64_t> host_waits{0}, host_wait_us{0};
  std::mutex mu;
  std::map<std::string, int64_t> fallbacks;
  void reset();
};

Metrics& metrics();
// LOOM_DEBUG, read once: 1 counters at exit, 2 a line per kernel, 3 the schedule,
// 4 kernel source, 5 the graph.
int debug_level();

}  // namespace loom
