#include "util/thread_pool.h"

#include <algorithm>

namespace clm {

namespace {

constexpr std::size_t kMaxChunks = 0xffff;  // the 16-bit field of the claim word

uint64_t pack(uint32_t gen, uint32_t chunks, uint32_t next) {
  return (static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(chunks) << 16) | next;
}
uint32_t generation_of(uint64_t w) { return static_cast<uint32_t>(w >> 32); }
uint32_t chunks_of(uint64_t w) { return static_cast<uint32_t>((w >> 16) & 0xffff); }
uint32_t next_of(uint64_t w) { return static_cast<uint32_t>(w & 0xffff); }

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  const int workers = std::max(0, n_threads - 1);
  workers_.reserve(static_cast<std::size_t>(workers));
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

std::size_t ThreadPool::chunk_count(std::size_t n) const {
  return std::min({n, kChunksPerThread * static_cast<std::size_t>(size()), kMaxChunks});
}

void ThreadPool::claim_chunks(uint32_t gen) {
  // Read before the first claim. If a claim below succeeds, the job `gen`
  // was not finished at that moment, so these were not yet rewritten.
  const Task task = task_.load(std::memory_order_relaxed);
  void* const ctx = ctx_.load(std::memory_order_relaxed);
  const std::size_t n = job_n_.load(std::memory_order_relaxed);
  uint64_t w = claim_.load(std::memory_order_acquire);
  for (;;) {
    if (generation_of(w) != gen || next_of(w) >= chunks_of(w)) return;
    if (!claim_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    const std::size_t chunks = chunks_of(w), i = next_of(w);
    task(ctx, n * i / chunks, n * (i + 1) / chunks);
    // The last chunk done wakes the caller only if it gave up polling; the
    // seq_cst pair (increment here, flag store there) makes one side see the other.
    if (chunks_done_.fetch_add(1) + 1 == chunks && caller_sleeping_.load()) {
      { std::lock_guard<std::mutex> lock(mu_); }
      done_cv_.notify_one();
    }
    w = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::run(std::size_t n, Task task, void* ctx) {
  if (n == 0) return;
  if (size() == 1 || n == 1) {
    task(ctx, 0, n);
    return;
  }
  const auto chunks = static_cast<uint32_t>(chunk_count(n));
  task_.store(task, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  job_n_.store(n, std::memory_order_relaxed);
  chunks_done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = ++generation_;
  // seq_cst store then seq_cst load of sleepers_: a worker going to sleep
  // either sees this generation or is counted here (and then woken under the
  // lock, so the notify cannot slip in before its wait).
  claim_.store(pack(gen, chunks, 0));
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    start_cv_.notify_all();
  }
  claim_chunks(gen);
  auto all_done = [this, chunks] { return chunks_done_.load() == chunks; };
  if (!caller_spin_.poll(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeping_.store(true);
    done_cv_.wait(lock, all_done);
    caller_sleeping_.store(false);
  }
}

void ThreadPool::worker_loop() {
  uint32_t seen = 0;
  AdaptiveSpin spin;
  for (;;) {
    auto has_job = [&] {
      return stop_.load(std::memory_order_relaxed) || generation_of(claim_.load()) != seen;
    };
    if (!spin.poll(has_job)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      start_cv_.wait(lock, has_job);
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_of(claim_.load(std::memory_order_acquire));
    claim_chunks(seen);
  }
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace clm
