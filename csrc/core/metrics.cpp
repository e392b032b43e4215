#include "core/metrics.h"

#include <cstdlib>

namespace loom {

void Metrics::reset() {
  kernels_run = kernels_compiled = cache_hits = disk_hits = realizations = 0;
  buffers_allocated = bytes_allocated = extern_calls = compile_us = disk_rejects = 0;
  kernels_unloaded = plan_hits = cohort_stores = sibling_stores = donated_stores = load_us = 0;
  superseded_bases = reductions_recomputed = ordered_scatters = host_waits = host_wait_us = kernels_optimized = 0;
  std::lock_guard<std::mutex> g(mu);
  fallbacks.clear();
}

Metrics& metrics() {
  static Metrics* m = new Metrics();  // leaked: read by at-exit reporting
  return *m;
}

int debug_level() {
  static const int level = [] {
    const char* s = std::getenv("LOOM_DEBUG");
    return s ? std::atoi(s) : 0;
  }();
  return level;
}

}  // namespace loom
