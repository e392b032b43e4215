// Realization: cut the graph below some buffers into kernels and run them.
#pragma once

#include <vector>

#include "core/graph.h"
#include "core/memory.h"

namespace loom {

// Computes the buffer's current value into memory; afterwards b.value() is realized.
void realize(Buffer& b);
// Computes a flat value node into memory (no-op when already realized).
void realize_value(const NodeRef& flat);
// Realizes every live buffer with pending work and waits for every task (loom.sync()).
void realize_all();
// Pointer to the realized bytes of the buffer (realizing it first, and waiting for the
// task that writes them: NOTE [Asynchronous execution]).
const void* realized_data(Buffer& b);

}  // namespace loom
