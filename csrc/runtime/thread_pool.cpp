#include "runtime/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace loom {

namespace {

// Workers wait for a job; the calling thread takes chunks too. Chunks are claimed from
// an atomic counter, so an uneven split balances itself.
class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 1; i < n; ++i) workers_.emplace_back([this] { loop(); });
  }
  int size() const { return int(workers_.size()) + 1; }

  void run(KernelFn fn, char** bufs, int64_t n, int64_t chunk) {
    std::unique_lock<std::mutex> lk(mu_);
    fn_ = fn;
    bufs_ = bufs;
    n_ = n;
    chunk_ = chunk;
    next_ = 0;
    active_ = int(workers_.size());
    ++generation_;
    cv_.notify_all();
    lk.unlock();
    work();
    lk.lock();
    done_cv_.wait(lk, [this] { return active_ == 0; });
  }

 private:
  void work() {
    for (;;) {
      int64_t s = next_.fetch_add(chunk_);
      if (s >= n_) return;
      fn_(bufs_, s, std::min(n_, s + chunk_));
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return generation_ != seen; });
      seen = generation_;
      lk.unlock();
      work();
      lk.lock();
      if (--active_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  KernelFn fn_ = nullptr;
  char** bufs_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  std::atomic<int64_t> next_{0};
  int active_ = 0;
  uint64_t generation_ = 0;
};

Pool& pool() {
  // Leaked: worker threads must outlive static destruction.
  static Pool* p = new Pool(std::max(1u, std::thread::hardware_concurrency()));
  return *p;
}

}  // namespace

int num_threads() { return pool().size(); }

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
