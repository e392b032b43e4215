// The executor: one thread that runs kernels, products and copies in the order the host
// issues them, while the host goes on recording.
#pragma once

#include <cstdint>
#include <functional>

namespace loom {

// NOTE [Asynchronous execution]: a training step's host work (recording ops, fusing,
// keying plans) took as long as its kernels and products, and the two ran one after the
// other. Now a realization fuses and compiles on the host and issues each kernel, product
// and copy as a task to the executor thread, which runs them in issue order on realized
// memory chosen at issue time; the host goes on recording. Order is all the
// synchronization tasks need among themselves: a task reads what the tasks before it
// wrote. The host waits only where it touches the bytes: reading realized memory waits
// for the task that last wrote it (Memory::written_by, await_writes), `loom.sync()` for
// every task. A block freed while tasks are unfinished is not handed out again before they
// finish (core/memory.cpp), so no task ever meets memory the host has reused. A kernel
// that may fault runs on the host after every earlier task (NOTE [Faults] needs its
// outcome before the realization goes on). A task's error (a failed library call) is
// raised by the host's next wait.
//
// On two cores the executor alone runs a task while the host records, and the host joins
// its parallel jobs when it waits (thread_pool.h); LOOM_ASYNC=0 runs every task on the
// issuing thread at once, as before.
bool asynchronous();

// Issues `task`; returns its number (see TaskCounters). Runs it at once when not
// asynchronous.
uint64_t submit(std::function<void()> task);

// Returns once task `n` and those before it have finished; rethrows the first error a
// task raised since the last wait that rethrew.
void await_task(uint64_t n);

// Returns once every issued task has finished; rethrows as await_task when `rethrow`.
void finish_tasks(bool rethrow = true);

}  // namespace loom
