// Scheduler: runs many sequences at once with continuous batching. Each step
// builds one Batch from the decode tokens of running sequences and prefill
// chunks of newly admitted ones, up to a token budget, and makes one forward
// call. Requests are admitted when the KV cache can hold them and queue
// otherwise; a request can be cancelled at any point, which releases its
// blocks. Prompts start from whatever prefix the KvCacheManager has resident.
// Thread-safe: submit/cancel/stats from any thread; callbacks run on the
// thread that steps the scheduler (its own loop thread after start()), with no
// scheduler lock held, so they may call submit() and cancel().
// When a running sequence needs one more KV block and none can be had, it is
// preempted: it ends with StopReason::Length, its summary's `preempted`
// set and a note saying why (its blocks go back to the pool; nothing it
// produced is lost or changed). Every cancellation and preemption is counted
// once per request, by cause (engine/end_cause.h).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "cache/reuse_map.h"
#include "cache/reuse_plan.h"
#include "engine/end_cause.h"
#include "engine/evict_policy.h"
#include "engine/kv_budget.h"
#include "engine/landing_desk.h"
#include "engine/prompt_typer.h"
#include "engine/request.h"
#include "engine/scheduler_deps.h"
#include "engine/scheduler_options.h"
#include "engine/session_pins.h"
#include "engine/stop_reason.h"
#include "model/model.h"
#include "model/prefill_flops.h"
#include "model/sampler.h"
#include "tier/tier_set.h"
#include "util/chunk_buffers.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

struct SchedulerStats {
  int running = 0;
  int queued = 0;
  uint64_t requests_finished = 0;
  uint64_t generated_tokens = 0;
  uint64_t prompt_tokens_computed = 0;
  uint64_t preempted = 0;          // sequences preempted, all causes (preempted_by below)
  PreemptCounts preempted_by{};    // by PreemptCause
  uint64_t cancelled = 0;          // requests cancelled, queued or running, all causes
  CancelCounts cancelled_by{};     // by CancelCause
  uint64_t blend_probed_tokens = 0;      // tokens run through blend's first pass
  uint64_t blend_recomputed_tokens = 0;  // copied tokens blend chose to recompute
  double prefill_flops = 0.0;            // arithmetic finished requests' prompts cost, probes included
  // Self-managed context (KV budgets): blocks forgotten by the policy, by
  // reason, and the state of running budgeted sequences after the last step.
  uint64_t evicted_blocks_budget = 0;    // a sequence outgrew its budget
  uint64_t evicted_blocks_pressure = 0;  // the pool was short for admission or growth
  uint64_t evicted_tokens = 0;
  int evict_candidates = 0;        // blocks queued as candidates
  int evict_protected_blocks = 0;  // blocks a protect rule keeps
  int sequences_over_budget = 0;   // holding more than their budget (blocks never evicted)
  double ttft_p50_s = 0.0;
  double ttft_p95_s = 0.0;
  double tokens_per_second = 0.0;  // generated tokens over time spent stepping
  SessionPinStats session_pins;    // pinned conversations and the blocks they hold
};

// What the scheduler holds for one running sequence, for tests and
// diagnostics.
struct RunningSequence {
  RequestId id = 0;
  std::vector<BlockId> blocks;
  int tokens = 0;  // K/V slots filled or being filled
  int32_t next_position = 0;  // the position the next token appended gets
};

class Scheduler {
 public:
  // Called for each generated token; returning false cancels the request.
  using TokenCallback = std::function<bool(const TokenEvent&)>;
  // Called exactly once per accepted request, when it ends for any reason.
  using DoneCallback = std::function<void(const RequestSummary&)>;

  Scheduler(Model& model, KvCacheManager& cache, ThreadPool& threads, SchedulerOptions options = {},
            SchedulerDeps deps = {});
  ~Scheduler();  // stops the loop, cancels what is left
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Fails (nothing queued, no callback) when the request is invalid (empty
  // prompt, token out of range, prompt longer than n_ctx, more than the
  // whole KV cache) or the queue is full.
  Result<RequestId> submit(Request request, TokenCallback on_token, DoneCallback on_done);
  // Cancels a queued or running request; its done callback reports
  // StopReason::Cancelled with the cause. A request that has already ended is not
  // counted again.
  void cancel(RequestId id, CancelCause cause = CancelCause::Client);
  // Session pins, applied on the stepping thread at its next step: keep the
  // resident exact prefix of `tokens` (a conversation's last turn) in RAM
  // for hold_s seconds under session `id`, replacing its previous pin; or
  // drop the pin. Pins go when the scheduler stops.
  void pin_session(std::string id, std::vector<int32_t> tokens, uint64_t cache_namespace, double hold_s);
  void unpin_session(std::string id, PinEnd end = PinEnd::Unpinned);

  // Runs the loop on a background thread until stop(); it sleeps while
  // there is nothing to do. A no-op once stopped.
  void start();
  // Stops the loop; running and queued requests are cancelled (their done
  // callbacks run) and later submits fail. Not from a callback.
  void stop();
  // One step on the caller's thread (only when not started, and from one
  // thread at a time). Returns false when there was nothing to do.
  bool step();
  // Steps until every submitted request has finished (not when started).
  void run_until_idle();
  bool started() const;

  SchedulerStats stats() const;
  // The cache's counters as of the end of the last step (safe from any thread).
  CacheStats cache_stats() const;
  // Only from the thread that steps, when no loop runs.
  std::vector<RunningSequence> running() const;
  // The manager itself: only for the thread that steps, when no loop runs.
  KvCacheManager& cache() { return cache_; }
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Sequence;
  using SequencePtr = std::unique_ptr<Sequence>;
  // A row of logits the forward pass returns: a decode step's (prompt_pos
  // -1) or a prompt row's.
  struct OutputRow {
    Sequence* seq = nullptr;
    int32_t prompt_pos = -1;
  };
  // A probe row of the batch: its deviation goes to seq's position pos.
  struct ProbeRow {
    Sequence* seq = nullptr;
    int32_t pos = 0;
  };
  // One step (step_once) and its phases, in order.
  bool step_once();
  uint64_t requests_finished() const;
  void sweep_expired(std::chrono::steady_clock::time_point now);
  // Fills step_ with this step's batch; false when it is empty.
  bool collect_batch();
  // The forward pass over step_'s batch, then commit, budgets and sampling;
  // returns the prompt tokens it computed.
  uint64_t run_batch();
  // The step's figures into stats_; returns whether the step progressed.
  bool publish_step(std::chrono::steady_clock::time_point t0, uint64_t finished_before, bool progressed,
                    uint64_t prefill_tokens);
  void apply_cancellations();
  // Applies the posted pin_session/unpin_session calls and drops expired
  // pins; returns whether a posted call was applied.
  bool apply_session_pins();
  // The loop's wait: until there is work, or the next pin expires.
  void wait_for_work(std::unique_lock<std::mutex>& lock);
  // Adopts the tier entries submit() fetched for the sequences that may be
  // admitted now, and for every queued one whose entries landed in pool
  // blocks (publishing those costs no copy and frees nothing later).
  // Outside the lock: it may copy block bytes.
  void promote_queued();
  void admit();
  // Appends this step's tokens to `batch`; returns the sequences in it, in
  // the order of their KvView index, and those that want logits in row order.
  void build_batch(Batch& batch, std::vector<Sequence*>& in_batch, std::vector<OutputRow>& outputs,
                   std::vector<ProbeRow>& probes);
  // Adds one sequence's prompt rows (blend probes, then rows to compute) to
  // the batch while `budget` lasts.
  void add_prompt_rows(Sequence& s, int32_t seq_index, int& budget, Batch& batch, std::vector<OutputRow>& outputs,
                       std::vector<ProbeRow>& probes);
  // Files the probes' deviations and residuals; a sequence whose first pass
  // is complete gets its recompute set.
  void take_probe_results(const std::vector<ProbeRow>& probes, std::span<const float> deviation,
                          std::span<const float> residual);
  // Every output row's own work, in parallel over the rows: a prompt row's
  // log-probabilities (filed in its sequence), a decode row's sample and
  // log-probabilities (left in events_[row]).
  void score_outputs(const std::vector<OutputRow>& outputs, std::span<const float> logits);
  // Scores the rows, then, one row after another, hands each sampled token
  // to its sequence (history, callbacks, ends).
  void sample_outputs(const std::vector<OutputRow>& outputs, std::span<float> logits);
  // Budgeted sequences of the batch forget what their policy picks.
  void enforce_budgets(const std::vector<Sequence*>& in_batch);
  // Pool pressure: running sequences forget candidate blocks, lowest score
  // first across them, then (none left) the blocks their policies would
  // forget next, longest sequence first, until `need` blocks are available.
  // Protected blocks stay. Returns whether they are. `mu_held`: the caller
  // (admission) holds mu_ already, which the eviction counters need.
  bool relieve_pressure(std::size_t need, bool mu_held = false);
  void refresh_budget_gauges();
  // Counts blocks live sequences forgot: taking mu_, or with it held.
  void count_evicted(uint64_t blocks, bool pressure);
  void record_evicted(uint64_t blocks, bool pressure);
  // Releases the sequence's blocks and calls its done callback. `reason`
  // Cancelled takes the sequence's cancel cause; a preempted one has its
  // preempt cause set before.
  void finish(Sequence& seq, StopReason reason, const std::string& error = {});
  void cancel_sequence(Sequence& seq, CancelCause cause);
  void remove_finished();
  void cancel_all();
  void loop();

  Model& model_;
  KvCacheManager& cache_;
  ThreadPool& threads_;
  SchedulerOptions options_;
  SchedulerDeps deps_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  // Guarded by mu_.
  std::deque<SequencePtr> queue_;
  std::vector<std::pair<RequestId, CancelCause>> cancelled_;
  struct PinCall {
    std::string session;
    std::vector<int32_t> tokens;  // empty: unpin
    uint64_t cache_namespace = 0;
    double hold_s = 0.0;
    PinEnd end = PinEnd::Unpinned;  // how an unpin counts
  };
  std::vector<PinCall> pin_calls_;
  RequestId next_id_ = 1;
  bool stopping_ = false;
  bool started_ = false;
  std::thread loop_;

  // Pool blocks for tier reads to land in (engine/landing_desk.h): submit()
  // asks for them and reads into them on its own thread.
  LandingDesk landings_{[this] {
    // Taking mu_ first means a loop about to wait has either seen the work
    // or is waiting, and gets this notification.
    { std::lock_guard lock(mu_); }
    wake_.notify_all();
  }};
  class SubmitLanding;  // scheduler_landing.cpp
  // submit(): reads the request's missing prefix blocks from the tiers into
  // blocks reserved for them.
  std::vector<LandedEntry> fetch_promoted(const Request& request);
  // Held by step() for a whole step when no loop runs, so that submit() can
  // reserve landing blocks between steps (try_lock: never from a callback).
  std::mutex step_mu_;
  // Stepping thread: a sequence that leaves without adoption gives back the
  // blocks its entries landed in.
  void drop_promoted(Sequence& seq);
  std::vector<double> ttft_samples_;  // ring of the most recent samples
  std::size_t ttft_next_ = 0;
  SchedulerStats stats_;
  CacheStats cache_stats_;
  double busy_s_ = 0.0;
  std::chrono::steady_clock::time_point last_sweep_{};

  // Owned by the stepping thread.
  std::vector<SequencePtr> running_;
  std::vector<float> logits_;  // [n_outputs][n_vocab] of the last forward call
  std::vector<float> deviation_;  // [n_probes] of the last forward call
  std::vector<float> residual_;   // [n_probes][n_embd] of the last forward call
  struct StepScratch {
    Batch batch;
    std::vector<Sequence*> in_batch;
    std::vector<OutputRow> outputs;
    std::vector<ProbeRow> probes;
    std::vector<KvSeqView> views;
  } step_;  // the last step's batch and bookkeeping, kept for their storage
  std::vector<TokenEvent> events_;    // [n_outputs] the sampled rows' tokens of the last step
  ChunkBuffers sample_rows_;          // the sampler's copies of logits rows, one per running chunk
  PrefillFlops flops_;
  SessionPins pins_;
};

}  // namespace clm
