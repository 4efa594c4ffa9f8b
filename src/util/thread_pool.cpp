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
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn) {
  if (n == 0) return;
  const int parts = size();
  if (parts == 1 || n == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    pending_ = parts - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  const auto [b, e] = chunk(n, parts, 0);
  if (b < e) fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  unsigned long seen = 0;
  for (;;) {
    const std::function<void(std::size_t, std::size_t)>* job;
    std::size_t n;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
    }
    const auto [b, e] = chunk(n, size(), index);
    if (b < e) (*job)(b, e);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace clm
