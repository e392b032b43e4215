// Runs a kernel's outer loop range on all cores.
#pragma once

#include <cstdint>

#include "runtime/compiler.h"

namespace loom {

// Calls fn(bufs, s, e) over [0, n) split into chunks of at least `grain` iterations,
// spread across the pool's threads; returns when all are done.
void run_parallel(KernelFn fn, char** bufs, int64_t n, int64_t grain);
int num_threads();
// Workers that sleep start spinning for a job (NOTE [Spinning pool]): a realization calls
// it as it starts, so their wake-up overlaps its host work before the first kernel.
void wake_workers();
// How long an idle worker spins before it sleeps (LOOM_SPIN_US, default 20 ms).
int64_t spin_us();

}  // namespace loom
