// The pool's jobs, as workers spin, sleep and are woken early (NOTE [Spinning pool]).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/thread_pool.h"

namespace {

std::atomic<int64_t> g_sum{0};

void add_range(char** bufs, int64_t s, int64_t e) {
  auto* marks = reinterpret_cast<std::atomic<int>*>(bufs[0]);
  for (int64_t i = s; i < e; ++i) {
    marks[i].fetch_add(1);
    g_sum.fetch_add(i);
  }
}

// Every index runs once, whether the workers were spinning, asleep, or woken ahead of the
// job (a wake with no job after it, or a second wake, must change nothing).
TEST(Pool, EveryIndexOnceAcrossSleepsAndWakes) {
  constexpr int64_t n = 4096;
  std::vector<std::atomic<int>> marks(n);
  char* bufs[1] = {reinterpret_cast<char*>(marks.data())};
  // Long enough for the workers to fall asleep.
  const auto idle = std::chrono::microseconds(loom::spin_us() * 3 / 2 + 2000);
  for (int round = 0; round < 24; ++round) {
    for (auto& m : marks) m.store(0);
    g_sum.store(0);
    if (round % 3 == 1) std::this_thread::sleep_for(idle);  // asleep
    if (round % 3 == 2) {
      std::this_thread::sleep_for(idle);
      loom::wake_workers();
      if (round % 2 == 0) loom::wake_workers();
    }
    loom::run_parallel(add_range, bufs, n, 16);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(marks[size_t(i)].load(), 1) << "round " << round;
    ASSERT_EQ(g_sum.load(), n * (n - 1) / 2);
  }
  loom::wake_workers();  // and none after: the workers go back to sleep on their own
}

}  // namespace
