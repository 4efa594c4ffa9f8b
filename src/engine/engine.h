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
#include "engine/scheduler.h"
#include "engine/token_stream.h"
#include "engine/stop_reason.h"
#include "model/model.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

struct EngineOptions {
  std::string model_path;
  int n_ctx = SchedulerOptions{}.n_ctx;  // tokens one sequence may hold
  int n_threads = 0;           // 0: all hardware threads
  KvTypes kv_types;  // K and V element types (kv_type.h); f16 both by default
  int block_size = 32;         // tokens per KV block
  // KV pool budget in MiB; 0 sizes the pool for n_ctx tokens. A budget
  // smaller than one n_ctx sequence also bounds what one sequence may hold.
  std::size_t kv_memory_mb = 0;
  // The scheduler's and the cache manager's settings take their defaults
  // from those structs, so that there is one default for each.
  int max_batch_tokens = SchedulerOptions{}.max_batch_tokens;  // tokens per forward call (decode + prompt chunks)
  int max_running = SchedulerOptions{}.max_running;            // sequences decoding at once
  int max_queued = SchedulerOptions{}.max_queued;              // requests waiting for room
  bool prefix_cache = CacheOptions{}.prefix_caching;           // reuse the K/V of identical prompt prefixes
  // Also reuse the leading tokens of a cached block the prompt continues
  // only partly, by copying them (CacheOptions::partial_block_reuse).
  bool partial_block_reuse = CacheOptions{}.partial_block_reuse;
  // The default reuse mode of requests and the span search's limits
  // (cache/reuse_plan.h). prefix_cache = false forces ReuseMode::Off.
  ReuseOptions reuse;
  // The semantic splitter's JSON rule file for the type guard and the
  // semantic block strategy (text/split_rules_file.h); empty: default rules.
  std::string split_rules;
  // Cached blocks hit this often are evicted last.
  uint32_t cache_hot_after_hits = CacheOptions{}.hot_after_hits;
  // Idle cached blocks older than this are dropped; 0 = never.
  double cache_ttl_s = CacheOptions{}.ttl_seconds;
  // Weights: a private huge-page copy (default) or the file's map in place.
  FileLoad weight_load = FileLoad::Copy;
  std::function<void(float)> on_load_progress;
  // The model's fingerprint if the caller remembers it from an earlier load
  // of the same file; otherwise it is computed (it hashes every weight byte).
  std::optional<uint64_t> known_fingerprint;
  // Storage tiers below RAM, fastest first (a disk cache, then Redis): each
  // factory opens one for the loaded model's fingerprint and KV layout
  // (tier/tier_set.h). Empty: RAM only.
  std::vector<TierFactory> tiers;
  // The tiers' background writer queues at most this many MiB of blocks;
  // beyond it writes are dropped (and counted), never waited for.
  std::size_t tier_write_queue_mb = 256;
  // Told of the blocks the RAM pool and the tiers store and drop (KV events
  // for cache-aware routers); null: nobody listens. Not owned: it outlives
  // the engine.
  KvEventSink* kv_events = nullptr;
  // Most of the pool conversations' pinned prefixes may hold (a share in
  // [0, 1]; 0: sessions pin nothing). See engine/session_pins.h.
  double session_pin_max_share = SessionPinOptions{}.max_share;
  // Self-managed context (SchedulerOptions::kv_budget_tokens, ::evict): a
  // sequence's KV budget in tokens (0: none) and the eviction policy.
  int kv_budget_tokens = 0;
  EvictOptions evict;
  // What kept tokens' positions become after forgetting (engine/kv_budget.h).
  EvictPositions evict_positions = EvictPositions::Keep;
};

// A request's options through the engine: the same struct the scheduler
// takes, so that nothing is copied field by field on the way.
using GenerateOptions = RequestOptions;

using GeneratedToken = TokenEvent;

struct GenerationStats {
  int prompt_tokens = 0;
  int cached_tokens = 0;    // prompt tokens reused from the cache (prefix + shift)
  ReuseCounts reuse;        // where each prompt token's K/V came from
  std::vector<std::optional<PromptLogprob>> prompt_logprobs;  // see RequestSummary
  int blend_probed = 0;        // see RequestSummary
  double prefill_flops = 0.0;  // see RequestSummary
  int generated_tokens = 0;
  double time_to_first_token_s = 0.0;
  double prefill_s = 0.0;   // admission to the first token
  double decode_s = 0.0;    // first token to the end
  StopReason stop_reason = StopReason::Stop;  // never Error: run() fails instead
  std::string note;         // why it ended early, if it did
  int evicted_tokens = 0;   // K/V slots forgotten within the KV budget (RequestSummary)
};

struct EngineCacheStats {
  CacheStats cache;
  SchedulerStats scheduler;
  TierStats tiers;  // empty without tiers
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);
  ~Engine();

  Model& model() { return *model_; }
  KvPool& pool() { return *pool_; }
  ThreadPool& threads() { return *threads_; }
  const EngineOptions& options() const { return options_; }
  // The reuse settings requests default to (EngineOptions::reuse, with
  // prefix_cache = false as mode off).
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
