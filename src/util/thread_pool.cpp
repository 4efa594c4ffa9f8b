#include "util/thread_pool.h"

#include <algorithm>

namespace clm {

namespace {

// Chunk i of `parts` over [0, n): contiguous, deterministic boundaries.
std::pair<std::size_t, std::size_t> chunk(std::size_t n, int parts, int i) {
  const std::size_t p = static_cast<std::size_t>(parts);
  const std::size_t idx = static_cast<std::size_t>(i);
  return {n * idx / p, n * (idx + 1) / p};
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  const int workers = std::max(0, n_threads - 1);
  workers_.reserve(static_cast<std::size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(std::size_t n, Task task, void* ctx) {
  if (n == 0) return;
  const int parts = size();
  if (parts == 1 || n == 1) {
    task(ctx, 0, n);
    return;
  }
  task_ = task;
  ctx_ = ctx;
  job_n_ = n;
  pending_.store(parts - 1, std::memory_order_relaxed);
  // seq_cst store then seq_cst load of sleepers_: a worker going to sleep
  // either sees this generation or is counted here (and then woken under the
  // lock, so the notify cannot slip in before its wait).
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    start_cv_.notify_all();
  }
  const auto [b, e] = chunk(n, parts, 0);
  if (b < e) task(ctx, b, e);
  auto all_done = [this] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!caller_spin_.poll(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeping_.store(true);
    done_cv_.wait(lock, all_done);
    caller_sleeping_.store(false);
  }
}

void ThreadPool::worker_loop(int index) {
  unsigned long seen = 0;
  AdaptiveSpin spin;
  for (;;) {
    auto has_job = [&] { return stop_.load(std::memory_order_relaxed) || generation_.load() != seen; };
    if (!spin.poll(has_job)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      start_cv_.wait(lock, has_job);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    const auto [b, e] = chunk(job_n_, size(), index);
    if (b < e) task_(ctx_, b, e);
    // The last one out wakes the caller only if it gave up spinning; the
    // seq_cst pair (decrement here, flag store there) makes one side see the other.
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      { std::lock_guard<std::mutex> lock(mu_); }
      done_cv_.notify_one();
    }
  }
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace clm
