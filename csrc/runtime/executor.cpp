#include "runtime/executor.h"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/memory.h"
#include "core/metrics.h"
#include "runtime/thread_pool.h"

namespace loom {

namespace {

// NOTE [Bounded lookahead]: a program that never reads a result (a training loop that
// logs nothing) records ahead of the executor without limit. Memory freed meanwhile is
// quarantined until the tasks issued before its release have run (core/memory.cpp), so
// every step took fresh blocks: a GPT training loop without a sync allocated 40 MB a step
// (3 GB of memory after 60 steps), whose first touches (page faults zeroing pages) made
// its kernels 3x slower: 67-115 ms a step where a sync per step took 22. Past kMaxAhead
// unfinished tasks, the host waits (helping run them) until half are done: a step or two
// of lookahead, which is all the overlap of recording and running needs.
constexpr uint64_t kMaxAhead = 512;

class Executor {
 public:
  Executor() {
    set_await_hook([](uint64_t n) { await_task(n); });
    thread_ = std::thread([this] { loop(); });
    // Tasks still queued at exit would run while statics are torn down.
    std::atexit([] { executor().wait(task_counters().issued.load(), false); });
  }

  static Executor& executor() {
    static Executor* e = new Executor();  // leaked, as the pool: its thread never ends
    return *e;
  }

  uint64_t submit(std::function<void()> task) {
    uint64_t n;
    bool wake;
    {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.push_back(std::move(task));
      n = task_counters().issued.fetch_add(1, std::memory_order_acq_rel) + 1;
      wake = sleeping_;
    }
    if (wake) work_cv_.notify_one();
    // NOTE [Bounded lookahead]
    if (n > kMaxAhead + task_counters().finished.load(std::memory_order_acquire))
      wait(n - kMaxAhead / 2, false);
    return n;
  }

  // Waits for task n, taking chunks of the executor's parallel jobs meanwhile.
  void wait(uint64_t n, bool rethrow) {
    TaskCounters& t = task_counters();
    auto done = [&] { return t.finished.load(std::memory_order_acquire) >= n; };
    if (!done()) {
      // The host helps as long as the executor makes progress; it sleeps only after
      // spin_time() in which no task finished (a long task that takes no help).
      const auto start = std::chrono::steady_clock::now();
      auto deadline = start + spin_time();
      uint64_t seen = t.finished.load(std::memory_order_acquire);
      while (!done()) {
        if (help_running_job()) continue;
        cpu_relax();
        const auto now = std::chrono::steady_clock::now();
        const uint64_t f = t.finished.load(std::memory_order_acquire);
        if (f != seen) {
          seen = f;
          deadline = now + spin_time();
        }
        if (now < deadline) continue;
        std::unique_lock<std::mutex> lk(mu_);
        ++waiting_;
        idle_cv_.wait(lk, done);
        --waiting_;
      }
      metrics().host_waits++;
      metrics().host_wait_us += std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
    }
    if (!rethrow) return;
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> lk(mu_);
      std::swap(e, error_);
    }
    if (e) std::rethrow_exception(e);
  }

 private:
  void loop() {
    TaskCounters& t = task_counters();
    auto queued = [&] {
      return t.issued.load(std::memory_order_acquire) > t.finished.load(std::memory_order_relaxed);
    };
    for (;;) {
      if (!spin_until(queued)) {
        std::unique_lock<std::mutex> lk(mu_);
        sleeping_ = true;
        work_cv_.wait(lk, [&] { return !queue_.empty(); });
        sleeping_ = false;
      }
      std::function<void()> task;
      {
        std::lock_guard<std::mutex> lk(mu_);
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        task();
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      task = nullptr;
      std::lock_guard<std::mutex> lk(mu_);
      t.finished.fetch_add(1, std::memory_order_acq_rel);
      if (waiting_) idle_cv_.notify_all();
    }
  }

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool sleeping_ = false;  // under mu_
  int waiting_ = 0;        // hosts asleep in wait(), under mu_
  std::exception_ptr error_;
};

}  // namespace

bool asynchronous() {
  static const bool on = [] {
    const char* e = std::getenv("LOOM_ASYNC");
    if (e && *e) return std::atoi(e) != 0;
    return std::thread::hardware_concurrency() > 1;
  }();
  return on;
}

uint64_t submit(std::function<void()> task) {
  if (!asynchronous()) {
    task();
    return 0;
  }
  return Executor::executor().submit(std::move(task));
}

void await_task(uint64_t n) {
  if (!asynchronous() || n == 0) return;
  Executor::executor().wait(n, true);
}

void finish_tasks(bool rethrow) {
  if (!asynchronous() || task_counters().issued.load(std::memory_order_acquire) == 0) return;
  Executor::executor().wait(task_counters().issued.load(std::memory_order_acquire), rethrow);
}

}  // namespace loom
