// The executor (NOTE [Asynchronous execution]): issue order, host reads after the writer,
// memory freed under a running task, errors at the next wait, the host joining its jobs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/memory.h"
#include "runtime/executor.h"
#include "runtime/thread_pool.h"

namespace {

using namespace loom;

// Blocks the executor until released (or two seconds pass).
struct Gate {
  std::atomic<bool> open{false};
  void wait() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!open.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  }
};

TEST(Executor, TasksRunInIssueOrder) {
  std::vector<int> seen;
  for (int i = 0; i < 2000; ++i) submit([&seen, i] { seen.push_back(i); });
  finish_tasks();
  ASSERT_EQ(seen.size(), 2000u);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(seen[size_t(i)], i);
}

TEST(Executor, HostReadsWaitForTheWritingTask) {
  if (!asynchronous()) GTEST_SKIP() << "LOOM_ASYNC=0";
  auto m = allocate_memory(sizeof(int));
  *static_cast<int*>(m->data) = 0;
  m->written_by = submit([p = m->data] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    *static_cast<int*>(p) = 7;
  });
  await_writes(*m);
  EXPECT_EQ(*static_cast<int*>(m->data), 7);
}

// A block freed while a task that may use it is unfinished is not handed out again until
// the task finishes.
TEST(Executor, FreedMemoryWaitsForUnfinishedTasks) {
  if (!asynchronous()) GTEST_SKIP() << "LOOM_ASYNC=0";
  constexpr size_t kOdd = 777 * 4096 + 123;  // a size class no other test uses
  finish_tasks();
  auto m = allocate_memory(kOdd);
  void* block = m->data;
  Gate gate;
  submit([&gate, block] {
    gate.wait();
    std::memset(block, 1, kOdd);  // the task still writes the block
  });
  m.reset();
  auto other = allocate_memory(kOdd);
  EXPECT_NE(other->data, block);
  gate.open = true;
  finish_tasks();
  other.reset();
  auto again = allocate_memory(kOdd);  // now either block may come back
  EXPECT_TRUE(again->data == block || again->data == other.get());
}

TEST(Executor, ATaskErrorIsRaisedByTheNextWait) {
  if (!asynchronous()) GTEST_SKIP() << "LOOM_ASYNC=0";
  submit([] { throw std::runtime_error("task failed"); });
  int after = 0;
  submit([&after] { after = 1; });  // later tasks still run
  EXPECT_THROW(finish_tasks(), std::runtime_error);
  EXPECT_EQ(after, 1);
  EXPECT_NO_THROW(finish_tasks());  // raised once
}

std::atomic<int> g_marks[4096];
std::atomic<bool> g_host_took_chunk{false};
std::thread::id g_host;

void mark_range(char** bufs, int64_t s, int64_t e) {
  const Gate& gate = *reinterpret_cast<const Gate*>(bufs[0]);
  // Other threads' chunks wait until the host has joined, so that it finds the job
  // running: each holds one chunk, and there are four per thread.
  if (std::this_thread::get_id() == g_host)
    g_host_took_chunk = true;
  else
    gate.wait();
  for (int64_t i = s; i < e; ++i) g_marks[i].fetch_add(1);
}

// A host waiting for the executor takes chunks of its parallel job.
TEST(Executor, TheWaitingHostJoinsTheRunningJob) {
  if (!asynchronous() || num_threads() < 2) GTEST_SKIP() << "LOOM_ASYNC=0 or one core";
  for (auto& m : g_marks) m.store(0);
  g_host = std::this_thread::get_id();
  g_host_took_chunk = false;
  Gate gate;
  submit([&gate] {
    char* bufs[1] = {reinterpret_cast<char*>(&gate)};
    run_parallel(mark_range, bufs, 4096, 16);
  });
  std::thread opener([&gate] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!g_host_took_chunk.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    gate.open = true;
  });
  finish_tasks();
  opener.join();
  EXPECT_TRUE(g_host_took_chunk.load());
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(g_marks[i].load(), 1) << i;
}

}  // namespace

namespace {

// An extern's task borrows its blocks: dropping the borrow gives nothing back, and the
// block stays the owner's (live metrics do not depend on the queue).
TEST(Executor, BorrowedMemoryIsNotGivenBack) {
  constexpr size_t kOdd = 555 * 4096 + 7;
  auto m = allocate_memory(kOdd);
  const MemoryStats before = memory_stats();
  {
    auto b = loom::borrow_memory(*m);
    EXPECT_EQ(b->data, m->data);
    EXPECT_EQ(b->nbytes, m->nbytes);
  }
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.live_blocks, before.live_blocks);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes);
}

}  // namespace
