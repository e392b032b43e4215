#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/executor.h"

namespace loom {

// Workers wait for a job; the calling thread takes chunks too, and so may a helper (a host
// waiting for the executor, NOTE [Asynchronous execution]). Chunks are claimed from an
// atomic counter, so an uneven split balances itself.
//
// NOTE [Spinning pool]: a training step launches hundreds of kernels back to back, many
// of them short. Sleeping on a condition variable between two of them costs each worker a
// futex wake and two context switches per kernel, which profiled at a tenth of a GPT
// step's time. So a worker that finishes a job spins a while for the next one before it
// sleeps, and the caller spins as long for the workers to finish before it sleeps.
// Spinning uses `pause` and gives up after a fixed time, so an idle or overloaded machine
// loses little.
//
// On the development VM a sleeping worker takes 0.3-0.8 ms to start a job (a halted virtual
// CPU, presumably, woken by its hypervisor): a kernel over 4 MB took 0.23 ms with the
// worker spinning and 0.5-1.0 ms after it slept, and a product split in two ran on the
// caller alone when the worker came late. Spinning 1 ms (not 0.06) took the CNN step's
// median from 34.1-34.4 to 29.0-31.8 ms. But the host also records a training step's ops
// between realizations for several milliseconds (a GPT forward, the backward up to the
// graph bound), and after each such gap the worker slept: a GPT step's generated kernels
// took 8.2 ms and its products ran at half their speed alone (the weight gradient of its
// 512x1024x128 product 1.15 ms against 0.55-0.6). The time is now 20 ms, of the order of
// libgomp's default spin for eager's OpenMP threads (GOMP_SPINCOUNT, 300000 iterations; not
// timed here). GPT step medians, spin times alternated four times: 40.4-51.1 ms at 1 ms,
// 35.4-45.6 at 5, 34.8-41.3 at 20; its kernels 8.2 -> 4.9 ms. LOOM_SPIN_US sets it (0:
// sleep at once), read once. A realization also wakes sleeping workers as it starts
// (wake_workers), so that their wake-up overlaps the host's work before the first kernel.
std::chrono::microseconds spin_time() {
  static const std::chrono::microseconds t = [] {
    const char* e = std::getenv("LOOM_SPIN_US");
    return std::chrono::microseconds(e && *e ? std::max(0L, std::atol(e)) : 20000L);
  }();
  return t;
}

namespace {

class Pool {
 public:
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { loop(); });
  }

  // Sleeping workers start spinning (and sleep again after spin_time() without a job).
  void wake() {
    if (sleeping_.load(std::memory_order_acquire) == 0) return;
    {
      std::lock_guard<std::mutex> lk(mu_);
      wakes_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
  }

  void run(KernelFn fn, char** bufs, int64_t n, int64_t chunk) {
    // The job's fields are published by the release of active_ (for helpers) and of
    // generation_ (for workers) below.
    fn_ = fn;
    bufs_ = bufs;
    n_ = n;
    chunk_ = chunk;
    next_.store(0, std::memory_order_relaxed);
    // The caller counts itself, so that a helper can join while it works.
    active_.store(int(workers_.size()) + 1, std::memory_order_release);
    if (!workers_.empty()) {
      {
        // Under the lock: a worker checks generation_ under it before it sleeps.
        std::lock_guard<std::mutex> lk(mu_);
        generation_.fetch_add(1, std::memory_order_release);
      }
      cv_.notify_all();
    }
    work();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) return;
    if (!spin_until([this] { return active_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lk(mu_);
      done_cv_.wait(lk, [this] { return active_.load(std::memory_order_acquire) == 0; });
    }
  }

  // Takes chunks of the job running now, if any; returns whether there was one. A helper
  // counts itself into active_ only while the job's caller is still in it, so the job it
  // reads is the one it joined: the caller cannot start another until the helper leaves.
  bool help() {
    int a = active_.load(std::memory_order_acquire);
    while (a > 0)
      if (active_.compare_exchange_weak(a, a + 1, std::memory_order_acq_rel)) {
        work();
        leave();
        return true;
      }
    return false;
  }

 private:
  void work() {
    for (;;) {
      int64_t s = next_.fetch_add(chunk_);
      if (s >= n_) return;
      fn_(bufs_, s, std::min(n_, s + chunk_));
    }
  }

  void leave() {
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the lock: the caller checks active_ under it before it sleeps.
      std::lock_guard<std::mutex> lk(mu_);
      done_cv_.notify_one();
    }
  }

  void loop() {
    uint64_t seen = 0, wake_seen = 0;
    for (;;) {
      auto job = [&] { return generation_.load(std::memory_order_acquire) != seen; };
      auto woken = [&] { return job() || wakes_.load(std::memory_order_acquire) != wake_seen; };
      while (!spin_until(job)) {
        std::unique_lock<std::mutex> lk(mu_);
        wake_seen = wakes_.load(std::memory_order_acquire);
        sleeping_.fetch_add(1, std::memory_order_acq_rel);
        cv_.wait(lk, woken);
        sleeping_.fetch_sub(1, std::memory_order_acq_rel);
      }
      seen = generation_.load(std::memory_order_acquire);
      work();
      leave();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  KernelFn fn_ = nullptr;
  char** bufs_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> wakes_{0};
  std::atomic<int> sleeping_{0};
};

// The threads that run one kernel: the machine's cores, or LOOM_THREADS.
int hardware_threads() {
  static const int n = [] {
    const char* s = std::getenv("LOOM_THREADS");
    if (s && std::atoi(s) >= 1) return std::atoi(s);
    return int(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return n;
}

Pool& pool() {
  // Leaked: worker threads must outlive static destruction. The executor (NOTE
  // [Asynchronous execution]) calls run() in place of one worker.
  static Pool* p = new Pool(std::max(0, hardware_threads() - (asynchronous() ? 2 : 1)));
  return *p;
}

}  // namespace

int num_threads() { return hardware_threads(); }

void wake_workers() { pool().wake(); }

bool help_running_job() { return pool().help(); }

int64_t spin_us() { return spin_time().count(); }

void run_parallel(KernelFn fn, char** bufs, int64_t n, int64_t grain) {
  if (n <= 0) return;
  int t = num_threads();
  if (t == 1 || n <= grain) {
    fn(bufs, 0, n);
    return;
  }
  int64_t chunk = std::max<int64_t>(grain, (n + 4 * t - 1) / (4 * t));
  pool().run(fn, bufs, n, chunk);
}

}  // namespace loom
