// A persistent pool of worker threads for data-parallel loops. Work is split
// by index ranges only, so a result never depends on how many threads ran it
// (each output element is computed by exactly one thread, in a fixed order).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "util/adaptive_spin.h"

namespace clm {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means "run inline, no workers".
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n); chunk i of size()
  // is [n*i/size(), n*(i+1)/size()), so boundaries depend only on n and the
  // pool size. Blocks until all chunks are done. Not reentrant: fn must not
  // call parallel_for. fn is called through a plain pointer, never copied.
  template <class Fn>
  void parallel_for(std::size_t n, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run(n, [](void* ctx, std::size_t b, std::size_t e) { (*static_cast<F*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }

 private:
  using Task = void (*)(void* ctx, std::size_t begin, std::size_t end);
  void run(std::size_t n, Task task, void* ctx);
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  // The job: written by the caller before generation_ is bumped (release),
  // read by workers after they see the new generation (acquire).
  Task task_ = nullptr;
  void* ctx_ = nullptr;
  std::size_t job_n_ = 0;
  // Handoff in both directions polls briefly first: a decode step runs a few
  // hundred short loops back to back, and a futex wake-up per loop costs as
  // much as the loop. Past the poll budget everyone sleeps, so an idle pool
  // burns no CPU.
  std::atomic<unsigned long> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::mutex mu_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};
  AdaptiveSpin caller_spin_;  // touched by the calling thread only
};

// Number of hardware threads, at least 1.
int hardware_threads();

}  // namespace clm
