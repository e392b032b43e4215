// Runs a kernel's outer loop range on all cores.
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/compiler.h"

namespace loom {

// Calls fn(bufs, s, e) over [0, n) split into chunks of at least `grain` iterations,
// spread across the pool's threads; returns when all are done.
void run_parallel(KernelFn fn, char** bufs, int64_t n, int64_t grain);
// The threads that run kernels: one per core (the executor and the pool's workers, and the
// host while it waits for them; NOTE [Asynchronous execution]).
int num_threads();
// Takes chunks of the parallel job running now, if any (a host waiting for the executor);
// returns whether there was one.
bool help_running_job();
// Workers that sleep start spinning for a job (NOTE [Spinning pool]): a realization calls
// it as it starts, so their wake-up overlaps its host work before the first kernel.
void wake_workers();
// How long an idle worker spins before it sleeps (LOOM_SPIN_US, default 20 ms).
int64_t spin_us();
std::chrono::microseconds spin_time();

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Calls `pause` until `done()` or spin_time() has passed; returns done().
template <typename Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + spin_time();
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return done();
  }
}

}  // namespace loom
