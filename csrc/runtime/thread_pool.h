// Runs a kernel's outer loop range on all cores.
#pragma once

#include <cstdint>

#include "runtime/compiler.h"

namespace loom {

// Calls fn(bufs, s, e) over [0, n) split into chunks of at least `grain` iterations,
// spread across the pool's threads; returns when all are done.
void run_parallel(KernelFn fn, char** bufs, int64_t n, int64_t grain);
int num_threads();

}  // namespace loom
