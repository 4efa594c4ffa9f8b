// A persistent pool of worker threads for data-parallel loops. A loop over
// [0, n) is cut into chunks whose boundaries depend only on n and the pool
// size; threads claim chunks one at a time until none is left. Each chunk
// runs on exactly one thread, in index order inside it, so a result never
// depends on which thread ran it or how many there were. Claiming (rather
// than one fixed share per thread) means a thread the OS or a hypervisor
// has preempted holds up at most the chunk it holds, not a whole share.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
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

  // Chunks per thread a loop is cut into (fewer when n is smaller): enough
  // to even out a late or preempted thread, few enough that claiming one
  // costs nothing next to running it.
  static constexpr std::size_t kChunksPerThread = 8;

  // Number of chunks parallel_for(n, ...) cuts [0, n) into; chunk i is
  // [n*i/c, n*(i+1)/c) for c chunks.
  std::size_t chunk_count(std::size_t n) const;

  // Calls fn(begin, end) on the chunks of [0, n) (see chunk_count), from the
  // calling thread and the workers. Blocks until all chunks are done. Not
  // reentrant: fn must not call parallel_for. fn is called through a plain
  // pointer, never copied.
  template <class Fn>
  void parallel_for(std::size_t n, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    run(n, [](void* ctx, std::size_t b, std::size_t e) { (*static_cast<F*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(std::addressof(fn))));
  }

 private:
  using Task = void (*)(void* ctx, std::size_t begin, std::size_t end);
  void run(std::size_t n, Task task, void* ctx);
  void worker_loop();
  // Claims and runs chunks of the job with generation `gen` until none is left.
  void claim_chunks(uint32_t gen);

  std::vector<std::thread> workers_;
  // The job. `claim_` packs (generation:32 | chunks:16 | next chunk:16); a
  // chunk is claimed by a compare-exchange that also checks the generation,
  // so a thread that wakes late can never claim a chunk of a newer job with
  // an older job's description. The description fields are written before
  // `claim_` publishes the generation (release) and rewritten only after
  // every chunk of the job has finished.
  std::atomic<uint64_t> claim_{0};
  std::atomic<Task> task_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<std::size_t> job_n_{0};
  std::atomic<uint32_t> chunks_done_{0};
  uint32_t generation_ = 0;  // the caller's count of jobs
  // Hand-offs in both directions poll briefly first (AdaptiveSpin): a decode
  // step runs a few hundred short loops back to back, and a futex wake-up per
  // loop costs as much as the loop. Past the poll budget everyone sleeps, so
  // an idle pool burns no CPU.
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
