// A persistent pool of worker threads for data-parallel loops. Work is split
// by index ranges only, so a result never depends on how many threads ran it
// (each output element is computed by exactly one thread, in a fixed order).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace clm {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means "run inline, no workers".
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n). Blocks until all
  // chunks are done. Not reentrant: fn must not call parallel_for.
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::size_t job_n_ = 0;
  unsigned long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

// Number of hardware threads, at least 1.
int hardware_threads();

}  // namespace clm
