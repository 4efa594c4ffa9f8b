// Engine: a loaded model with its KV pool, prefix cache, scheduler and worker
// threads, built from one options struct. The CLI and server talk to this,
// never to the layers below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "cache/kv_cache_manager.h"
#include "cache/kv_pool.h"
#include "engine/engine_deps.h"
#include "engine/engine_options.h"
#include "engine/scheduler.h"
#include "engine/token_stream.h"
#include "engine/stop_reason.h"
#include "model/model.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

// A request's options through the engine: the same struct the scheduler
// takes, so that nothing is copied field by field on the way.
using GenerateOptions = RequestOptions;

using GeneratedToken = TokenEvent;

// A finished request's summary (engine/request.h), with the two durations
// that callers of generate() report. Its stop_reason is never Error:
// generate() fails instead.
struct GenerationStats : RequestSummary {
  // Admission to the first token (to the end, if nothing was generated).
  double prefill_s() const {
    return (generated_tokens > 0 ? time_to_first_token_s : total_s) - queue_s;
  }
  // First token to the end.
  double decode_s() const { return generated_tokens > 0 ? total_s - time_to_first_token_s : 0.0; }
};

struct EngineCacheStats {
  CacheStats cache;
  SchedulerStats scheduler;
  TierStats tiers;  // empty without tiers
};

class Engine {
 public:
  // Fails on options check_engine_options refuses, before loading anything.
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options, EngineDeps deps = {});
  ~Engine();

  Model& model() { return *model_; }
  KvPool& pool() { return *pool_; }
  ThreadPool& threads() { return *threads_; }
  const EngineOptions& options() const { return options_; }
  // The reuse settings requests default to (EngineOptions::scheduler.reuse,
  // with cache.prefix_caching = false as mode off).
  const ReuseOptions& reuse_defaults() const;
  // The model's fingerprint (model/fingerprint.h).
  uint64_t fingerprint() const { return fingerprint_; }
  // What cache keys and stored entries carry: the model's fingerprint joined
  // with the kernels' numerics (kernels/numerics.h), fixed at creation.
  uint64_t cache_fingerprint() const { return cache_fingerprint_; }
  // The storage tiers below RAM; null without any.
  TierSet* tiers() { return tiers_.get(); }

  // Runs one request through the scheduler and waits for it. Without a
  // scheduler loop (scheduler().start()), the caller's thread steps it.
  // on_token is called for each generated token; returning false stops.
  Result<GenerationStats> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                   const std::function<bool(const GeneratedToken&)>& on_token);

  // Serving: start() runs the scheduler's loop on a thread of its own
  // until stop(), which cancels what still runs (each request's done
  // callback runs, its stream ends) and makes later requests fail.
  // generate() then waits on that loop instead of stepping it.
  void start();
  void stop();
  // One request as a stream of tokens, for callers that poll rather than
  // wait (the server, the Python module); see TokenStream. Fails as
  // Scheduler::submit does (a full queue is Overloaded, a stopped engine
  // Unavailable).
  Result<std::unique_ptr<TokenStream>> open_stream(Request request, TokenStream::ReadyCallback on_ready = {});
  // A conversation's last turn kept resident for hold_s seconds, or no
  // longer (engine/session_pins.h).
  void pin_session(std::string id, std::vector<int32_t> tokens, uint64_t cache_namespace, double hold_s);
  void unpin_session(std::string id, PinEnd end = PinEnd::Unpinned);
  // Drops every cached block that no request holds (benchmarks and
  // evaluations start each case from an empty cache).
  void clear_cached();

  EngineCacheStats cache_stats() const;

 private:
  Engine() = default;
  EngineOptions options_;
  uint64_t fingerprint_ = 0;
  uint64_t cache_fingerprint_ = 0;
  // Declaration order is destruction order in reverse: the scheduler goes
  // first, then the cache it drives, then the pool and the model.
  std::unique_ptr<Model> model_;
  std::unique_ptr<ThreadPool> threads_;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<TierSet> tiers_;  // outlives the cache, which tells it of blocks
  std::vector<std::string> unavailable_tiers_;  // left out at start: why, each (TierStats::unavailable)
  std::unique_ptr<KvCacheManager> cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::mutex step_mu_;  // one caller thread steps the scheduler at a time
};

// Bytes of K/V one token occupies for this model and KV type.
std::size_t kv_bytes_per_token(const ModelConfig& config, KvTypes types);

}  // namespace clm
