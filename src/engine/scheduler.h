// Scheduler: runs many sequences at once with continuous batching. Each step
// builds one Batch from the decode tokens of running sequences and prefill
// chunks of newly admitted ones, up to a token budget, and makes one forward
// call. Requests are admitted when the KV cache can hold them and queue
// otherwise; a request can be cancelled at any point, which releases its
// blocks. Prompts start from whatever prefix the KvCacheManager has resident.
// Thread-safe: submit/cancel from any thread; callbacks run on the thread
// that steps the scheduler (its own loop thread after start()).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "model/model.h"
#include "model/sampler.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

using RequestId = uint64_t;

struct SchedulerOptions {
  int max_batch_tokens = 512;   // tokens per forward call (decode + prefill chunks)
  int max_running = 16;         // sequences decoding at once
  int max_queued = 256;         // waiting requests; submit fails beyond this
  int n_ctx = 4096;             // most tokens one sequence may hold
};

struct Request {
  std::vector<int32_t> prompt;
  int max_tokens = 128;
  int top_logprobs = 0;
  bool stop_at_end_of_generation = true;
  SamplerParams sampler;
  uint64_t cache_namespace = 0;  // requests in different namespaces share no blocks
};

struct TokenEvent {
  int32_t id = 0;
  float logprob = 0.0f;  // of the chosen token under the unpenalized distribution
  std::vector<std::pair<int32_t, float>> top_logprobs;
};

struct RequestSummary {
  RequestId id = 0;
  int prompt_tokens = 0;
  int cached_tokens = 0;     // attached from the prefix cache, not computed
  int generated_tokens = 0;
  double queue_s = 0.0;      // submit to admission
  double time_to_first_token_s = 0.0;  // submit to first token
  double total_s = 0.0;
  std::string stop_reason;   // "stop", "length", "cancelled", "error"
  std::string error;         // set when stop_reason == "error"
};

struct SchedulerStats {
  int running = 0;
  int queued = 0;
  uint64_t requests_finished = 0;
  uint64_t generated_tokens = 0;
  uint64_t prompt_tokens_computed = 0;
  double ttft_p50_s = 0.0;
  double ttft_p95_s = 0.0;
  double tokens_per_second = 0.0;  // generated tokens over time spent stepping
};

class Scheduler {
 public:
  // Called for each generated token; returning false cancels the request.
  using TokenCallback = std::function<bool(const TokenEvent&)>;
  // Called exactly once per accepted request, when it ends for any reason.
  using DoneCallback = std::function<void(const RequestSummary&)>;

  Scheduler(Model& model, KvCacheManager& cache, ThreadPool& threads, SchedulerOptions options = {});
  ~Scheduler();  // stops the loop, cancels what is left
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Fails (nothing queued, no callback) when the request is invalid (empty
  // prompt, token out of range, prompt longer than n_ctx, more than the
  // whole KV cache) or the queue is full.
  Result<RequestId> submit(Request request, TokenCallback on_token, DoneCallback on_done);
  // Cancels a queued or running request; its done callback reports "cancelled".
  void cancel(RequestId id);

  // Runs the loop on a background thread until stop().
  void start();
  // Stops the loop; running and queued requests are cancelled.
  void stop();
  // One step on the caller's thread (only when not started). Returns false
  // when there was nothing to do.
  bool step();
  // Steps until every submitted request has finished (not when started).
  void run_until_idle();

  SchedulerStats stats() const;
  KvCacheManager& cache() { return cache_; }

 private:
  struct Sequence;
  void admit();
  void finish(Sequence& seq, const std::string& reason, const std::string& error = {});

  Model& model_;
  KvCacheManager& cache_;
  ThreadPool& threads_;
  SchedulerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> queue_;
  std::vector<RequestId> cancelled_;
  RequestId next_id_ = 1;
  bool stopping_ = false;
  std::thread loop_;

  // Owned by the stepping thread.
  std::vector<std::unique_ptr<Sequence>> running_;
  std::vector<double> ttft_samples_;
  SchedulerStats stats_;
  double busy_s_ = 0.0;
};

// A blocking iterator over one request's tokens, for callers that prefer to
// pull: next() returns tokens until the request ends, then nullopt.
class TokenStream {
 public:
  static Result<std::unique_ptr<TokenStream>> open(Scheduler& scheduler, Request request);
  ~TokenStream();  // cancels the request if it is still running
  std::optional<TokenEvent> next();
  // Valid once next() has returned nullopt.
  const RequestSummary& summary() const { return summary_; }
  void cancel();

 private:
  TokenStream() = default;
  Scheduler* scheduler_ = nullptr;
  RequestId id_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool done_ = false;
  RequestSummary summary_;
};

}  // namespace clm
