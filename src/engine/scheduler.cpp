#include "engine/scheduler.h"

#include <algorithm>
#include <chrono>

#include "engine/scheduler_sequence.h"
#include "model/logprobs.h"
#include "util/check.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

constexpr std::size_t kTtftWindow = 1024;

}  // namespace

Scheduler::Scheduler(Model& model, KvCacheManager& cache, ThreadPool& threads, SchedulerOptions options,
                     SchedulerDeps deps)
    : model_(model),
      cache_(cache),
      threads_(threads),
      options_(options),
      deps_(std::move(deps)),
      flops_(model.config()),
      pins_(cache, options.session_pins) {
  if (!deps_.typer) deps_.typer = PromptTyper::with_default_rules();
  CLM_CHECK(options_.max_batch_tokens > 0, "max_batch_tokens must be positive");
  CLM_CHECK(options_.max_running > 0, "max_running must be positive");
  CLM_CHECK(options_.max_queued >= 0, "max_queued must not be negative");
  CLM_CHECK(options_.n_ctx > 0, "n_ctx must be positive");
  cache_stats_ = cache_.stats();
}

Scheduler::~Scheduler() { stop(); }

Result<RequestId> Scheduler::submit(Request request, TokenCallback on_token, DoneCallback on_done) {
  const int n_vocab = model_.config().n_vocab;
  const std::size_t n = request.prompt.size();
  if (n == 0) return fail(ErrorKind::InvalidRequest, "request has an empty prompt");
  for (std::size_t i = 0; i < n; ++i) {
    const int32_t t = request.prompt[i];
    if (t < 0 || t >= n_vocab)
      return fail(ErrorKind::InvalidRequest, "prompt token " + std::to_string(t) + " at index " + std::to_string(i) +
                  " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
  }
  ResolvedRequestSettings settings = resolve_request_settings(options_, request.overrides);
  const int kv_budget = settings.kv_budget_tokens;
  if (kv_budget < 0) return fail(ErrorKind::InvalidRequest, "kv budget must not be negative");
  if (kv_budget == 0 && n > static_cast<std::size_t>(options_.n_ctx))
    return fail(ErrorKind::ContextExceeded, "prompt has " + std::to_string(n) + " tokens, more than the context size " +
                std::to_string(options_.n_ctx));
  if (request.max_tokens < 0) return fail(ErrorKind::InvalidRequest, "max_tokens must not be negative");
  // Only an override is checked here: the defaults are checked once, with
  // the engine's options (check_engine_options).
  if (const auto& blend = request.overrides.blend; blend && !(blend->ratio >= 0.0f && blend->ratio <= 1.0f))
    return fail(ErrorKind::InvalidRequest, "blend ratio must be in [0, 1]");
  if (request.top_logprobs < 0 || request.top_logprobs > n_vocab)
    return fail(ErrorKind::InvalidRequest, "top_logprobs must be in 0.." + std::to_string(n_vocab));
  const int block_size = cache_.pool().geometry().block_size;
  const int need_tokens = std::min(static_cast<int>(n) + 1, kv_budget > 0 ? kv_budget + block_size : options_.n_ctx);
  const std::size_t need_blocks = static_cast<std::size_t>((need_tokens + block_size - 1) / block_size);
  if (need_blocks > cache_.pool().n_blocks())
    return fail(ErrorKind::TooLarge, "prompt needs " + std::to_string(need_blocks) + " KV blocks, more than the whole cache holds (" +
                std::to_string(cache_.pool().n_blocks()) + ")");

  auto seq = std::make_unique<Sequence>(0, std::move(request), std::move(on_token), std::move(on_done), block_size);
  seq->settings = std::move(settings);
  seq->max_new = std::min(seq->request.max_tokens, options_.n_ctx - seq->n_prompt);
  if (kv_budget > 0) {
    seq->unbounded = true;
    seq->max_new = seq->request.max_tokens;
    // Statistics and a policy only for a sequence that can outgrow its budget.
    if (static_cast<int64_t>(seq->n_prompt) + seq->max_new > kv_budget) {
      auto budget = KvBudget::create(kv_budget, options_.evict, block_size,
                                     seq->settings.evict_positions);
      if (!budget) return fail(ErrorKind::InvalidRequest, budget.error().message);
      seq->budget = std::move(*budget);
    }
  }
  // The history grows by a token a step; room for it is made here, on the
  // caller's thread, so that decode steps do not reallocate it.
  seq->history.reserve(static_cast<std::size_t>(seq->n_prompt) +
                       static_cast<std::size_t>(std::clamp(seq->max_new, 0, options_.n_ctx)));
  // Typed here, on the caller's thread, not at admission on the stepping
  // one. Every prompt that may be cached is typed, whatever its own mode:
  // its blocks may be a later request's span sources.
  if (seq->settings.reuse.mode != ReuseMode::Off)
    seq->labels = deps_.typer->label(model_.tokenizer(), seq->request.prompt);
  seq->submitted = Clock::now();
  // Tier I/O happens here, on the caller's thread and before the request is
  // queued, never on the scheduler's thread or under its lock; the K/V lands
  // in pool blocks the stepping thread reserved for it.
  if (deps_.tiers && seq->settings.reuse.mode != ReuseMode::Off)
    seq->promoted = fetch_promoted(seq->request);
  RequestId id = 0;
  {
    std::unique_lock lock(mu_);
    const bool refused = stopping_ || queue_.size() >= static_cast<std::size_t>(options_.max_queued);
    if (refused) {
      std::vector<BlockId> landed;
      for (const LandedEntry& e : seq->promoted)
        if (e.block != kNoBlock) landed.push_back(e.block);
      lock.unlock();
      landings_.hand_back(landed);
    }
    if (stopping_) return fail(ErrorKind::Unavailable, "the scheduler is stopped");
    if (refused)
      return fail(ErrorKind::Overloaded, "request queue full (" + std::to_string(options_.max_queued) + " waiting)");
    id = next_id_++;
    seq->id = id;
    queue_.push_back(std::move(seq));
    stats_.queued = static_cast<int>(queue_.size());
  }
  wake_.notify_all();
  return id;
}

void Scheduler::cancel(RequestId id, CancelCause cause) {
  {
    std::lock_guard lock(mu_);
    cancelled_.emplace_back(id, cause);
  }
  wake_.notify_all();
}

bool Scheduler::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

void Scheduler::start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  loop_ = std::thread([this] { loop(); });
}

void Scheduler::stop() {
  bool join = false;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    join = loop_.joinable();
  }
  wake_.notify_all();
  if (join) {
    CLM_CHECK(loop_.get_id() != std::this_thread::get_id(), "stop() called from a scheduler callback");
    loop_.join();
    std::lock_guard lock(mu_);
    started_ = false;
  } else {
    cancel_all();
    pins_.clear();
  }
}

void Scheduler::wait_for_work(std::unique_lock<std::mutex>& lock) {
  auto has_work = [&] {
    return stopping_ || !queue_.empty() || !cancelled_.empty() || !pin_calls_.empty() || !running_.empty() ||
           landings_.has_work();
  };
  // An idle server still unpins sessions on time: it wakes when the next
  // pin expires.
  const std::optional<double> deadline = pins_.next_deadline();
  if (!deadline) {
    wake_.wait(lock, has_work);
    return;
  }
  wake_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, *deadline - pins_.now())), has_work);
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wait_for_work(lock);
      if (stopping_) break;
    }
    step_once();
  }
  landings_.close();
  cancel_all();
  pins_.clear();
}

bool Scheduler::step() {
  CLM_CHECK(!started(), "step() while the loop thread runs");
  std::lock_guard step(step_mu_);
  return step_once();
}

void Scheduler::run_until_idle() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (queue_.empty() && cancelled_.empty() && pin_calls_.empty() && running_.empty()) return;
    }
    // Every admissible request fits an empty pool, so a step always progresses.
    CLM_CHECK(step(), "scheduler made no progress with work pending");
  }
}

// One step, phase by phase: requests' news first (cancellations, session
// pins), then room (expired blocks, tier landings, promoted entries,
// admission), then one forward pass over the batch, then the bookkeeping.
bool Scheduler::step_once() {
  const auto t0 = Clock::now();
  const uint64_t finished_before = requests_finished();
  apply_cancellations();
  const bool pins_changed = apply_session_pins();
  sweep_expired(t0);
  const std::size_t running_before = running_.size();
  landings_.serve(cache_);
  promote_queued();
  admit();
  bool progressed = running_.size() != running_before || pins_changed;
  uint64_t prefill_tokens = 0;
  if (collect_batch()) {
    progressed = true;
    prefill_tokens = run_batch();
  }
  remove_finished();
  refresh_budget_gauges();
  return publish_step(t0, finished_before, progressed, prefill_tokens);
}

uint64_t Scheduler::requests_finished() const {
  std::lock_guard lock(mu_);
  return stats_.requests_finished;
}

void Scheduler::sweep_expired(Clock::time_point now) {
  // Expired cached blocks go before admission so their room is usable now.
  // At most once a second: a sweep is not free, and a TTL is coarse.
  if (now - last_sweep_ < std::chrono::seconds(1)) return;
  cache_.sweep_expired();
  last_sweep_ = now;
}

bool Scheduler::collect_batch() {
  // The step's batch and bookkeeping live in step_, emptied here, so that
  // their storage is reused from step to step.
  Batch& batch = step_.batch;
  batch.tokens.clear();
  batch.resume_residual.clear();
  batch.probe_layer = std::clamp(options_.reuse.blend_layer, 1, std::max(1, model_.config().n_layers - 1));
  step_.in_batch.clear();
  step_.outputs.clear();
  step_.probes.clear();
  build_batch(batch, step_.in_batch, step_.outputs, step_.probes);
  for (Sequence* s : step_.in_batch) s->batched = false;  // the forward pass is the last to use their slots
  return !batch.empty();
}

uint64_t Scheduler::run_batch() {
  const Batch& batch = step_.batch;
  const std::vector<Sequence*>& in_batch = step_.in_batch;
  std::vector<KvSeqView>& views = step_.views;
  views.clear();
  for (Sequence* s : in_batch) views.push_back(s->budget ? s->budget->view(s->kv) : s->kv.table.view());
  const std::size_t n_vocab = static_cast<std::size_t>(model_.config().n_vocab);
  logits_.resize(step_.outputs.size() * n_vocab);
  deviation_.resize(step_.probes.size());
  const std::size_t n_embd = static_cast<std::size_t>(model_.config().n_embd);
  residual_.resize(step_.probes.size() * n_embd);
  const KvView view{cache_.pool().geometry(), views};
  if (auto ok = model_.forward(batch, view, logits_, threads_, deviation_, residual_); !ok) {
    for (Sequence* s : in_batch) finish(*s, StopReason::Error, ok.error().message);
    return 0;
  }
  uint64_t prefill_tokens = 0;
  for (const BatchToken& t : batch.tokens)
    if (!t.probe && in_batch[static_cast<std::size_t>(t.seq)]->has_pending == false) ++prefill_tokens;
  take_probe_results(step_.probes, deviation_, residual_);
  for (Sequence* s : in_batch) {
    s->kv.final_limit = s->final_limit();
    cache_.commit(s->kv);
    s->has_pending = false;  // its K/V is now in the cache
  }
  enforce_budgets(in_batch);
  sample_outputs(step_.outputs, logits_);
  // A request for zero tokens ends once its prompt is in the cache.
  for (Sequence* s : in_batch)
    if (!s->finished && !s->prefilling() && s->max_new == 0) finish(*s, StopReason::Length);
  return prefill_tokens;
}

bool Scheduler::publish_step(Clock::time_point t0, uint64_t finished_before, bool progressed,
                             uint64_t prefill_tokens) {
  std::lock_guard lock(mu_);
  progressed = progressed || stats_.requests_finished != finished_before;
  stats_.prompt_tokens_computed += prefill_tokens;
  stats_.running = static_cast<int>(running_.size());
  stats_.queued = static_cast<int>(queue_.size());
  cache_stats_ = cache_.stats();
  stats_.session_pins = pins_.stats();
  if (progressed) busy_s_ += seconds_between(t0, Clock::now());
  return progressed;
}

void Scheduler::apply_cancellations() {
  std::vector<std::pair<RequestId, CancelCause>> ids;
  std::vector<std::pair<SequencePtr, CancelCause>> queued;
  {
    std::lock_guard lock(mu_);
    ids.swap(cancelled_);
    for (const auto& entry : ids) {
      const RequestId id = entry.first;
      auto it = std::find_if(queue_.begin(), queue_.end(), [id](const SequencePtr& s) { return s->id == id; });
      if (it == queue_.end()) continue;
      queued.emplace_back(std::move(*it), entry.second);
      queue_.erase(it);
    }
  }
  for (auto& [s, cause] : queued) cancel_sequence(*s, cause);
  // A request cancelled twice, or after it ended, is found finished (or
  // gone) and is not counted again.
  for (const auto& [id, cause] : ids)
    for (auto& s : running_)
      if (s->id == id && !s->finished) cancel_sequence(*s, cause);
  remove_finished();
}

void Scheduler::cancel_sequence(Sequence& seq, CancelCause cause) {
  seq.cancel_cause = cause;
  finish(seq, StopReason::Cancelled);
}

void Scheduler::build_batch(Batch& batch, std::vector<Sequence*>& in_batch, std::vector<OutputRow>& outputs,
                            std::vector<ProbeRow>& probes) {
  int budget = options_.max_batch_tokens;
  auto index_of = [&](Sequence* s) {
    s->batched = true;
    in_batch.push_back(s);
    return static_cast<int32_t>(in_batch.size() - 1);
  };
  // Pool pressure is relieved before any sequence is in the batch, so that
  // every running sequence may give up blocks: each decode token that
  // starts a block needs one.
  std::size_t need = 0;
  for (const auto& sp : running_)
    if (!sp->finished && sp->has_pending && sp->kv.table.n_slots() >= sp->kv.table.capacity()) ++need;
  if (need > cache_.available_blocks()) relieve_pressure(need);
  // Decode tokens first: one per generating sequence, oldest first.
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (s.finished || !s.has_pending || budget == 0) continue;
    bool room = static_cast<bool>(cache_.reserve(s.kv, 1));
    // Pinned conversations give way first (they lose nothing but cache),
    // then budgeted sequences forget, and only then is anyone preempted.
    while (!room && pins_.release_oldest()) room = static_cast<bool>(cache_.reserve(s.kv, 1));
    if (!room) room = relieve_pressure(cache_.available_blocks() + 1) && cache_.reserve(s.kv, 1);
    if (!room) {
      // Preemption policy: the sequence that cannot grow ends here; what it
      // produced stands, and its blocks make room for the others.
      s.preempt_cause = PreemptCause::KvCacheFull;
      finish(s, StopReason::Length, "preempted: the KV cache is full");
      continue;
    }
    const int32_t slot = cache_.append(s.kv, s.pending);
    batch.add(s.pending, s.kv.table.positions()[static_cast<std::size_t>(slot)], index_of(&s), slot, true);
    outputs.push_back({&s, -1});
    --budget;
  }
  // Then prompt chunks, in admission order, until the budget is spent.
  for (auto& sp : running_) {
    Sequence& s = *sp;
    if (s.finished || !s.prefilling() || budget == 0) continue;
    add_prompt_rows(s, index_of(&s), budget, batch, outputs, probes);
  }
}

void Scheduler::add_prompt_rows(Sequence& s, int32_t seq_index, int& budget, Batch& batch,
                                std::vector<OutputRow>& outputs, std::vector<ProbeRow>& probes) {
  // A new sequence's slot i holds prompt token i at position i: slots up to
  // the last reused span exist already (empty until filled), the rest are
  // appended.
  // A sequence that forgot blocks (all before the rows it computes now)
  // holds prompt token pos at slot pos - evicted_tokens, and computes it at
  // position pos, or pos - closed_positions once holes are closed.
  auto position_of = [&](int32_t pos) { return s.budget ? pos - s.budget->closed_positions() : pos; };
  auto slot_for = [&](int32_t pos) {
    const int32_t at = pos - s.evicted_tokens();
    if (at >= s.kv.table.n_slots()) {
      const int32_t slot = cache_.append(s.kv, s.request.prompt[static_cast<std::size_t>(pos)]);
      CLM_CHECK(slot == at, "prompt slots follow prompt positions");
    } else if (s.kv.table.positions()[static_cast<std::size_t>(at)] == kEmptySlot) {
      cache_.fill(s.kv, at, position_of(pos));
    }
    CLM_CHECK(s.kv.table.positions()[static_cast<std::size_t>(at)] == position_of(pos),
              "a prompt slot holds its token's position");
    return at;
  };
  while (budget > 0 && s.probing()) {
    const int32_t n = std::min(s.probe_region.end - s.probe_at, budget);
    for (int32_t pos = s.probe_at; pos < s.probe_at + n; ++pos) {
      batch.add_probe(s.request.prompt[static_cast<std::size_t>(pos)], pos, seq_index, slot_for(pos));
      probes.push_back({&s, pos});
      s.prefill_flops += flops_.probe(pos, batch.probe_layer);
    }
    s.blend_probed += n;
    budget -= n;
    s.probe_at += n;
  }
  if (s.blend_pending()) return;  // the second pass waits for every deviation
  const std::size_t n_embd = static_cast<std::size_t>(model_.config().n_embd);
  bool rows_added = false;
  while (budget > 0 && s.compute_range < s.compute.size()) {
    const PromptRange range = s.compute[s.compute_range];
    int32_t n = std::min(range.end - s.compute_at, budget);
    if (s.budget) {
      // None of its rows is in the batch yet, so its slots may still move:
      // it first forgets what its budget (an attached prefix may exceed it)
      // and the pool's pressure ask of it, then reserves room for this chunk
      // (see admission_tokens).
      s.batched = rows_added;
      if (!rows_added)
        count_evicted(static_cast<uint64_t>(s.budget->enforce(cache_, s.kv, model_.tokenizer())), false);
      // A chunk is at most the budget, so the sequence holds at most twice it.
      n = std::min(n, s.budget->budget_tokens());
      const int room = s.kv.table.capacity() - s.kv.table.n_slots();
      const int block = cache_.pool().geometry().block_size;
      if (room < n && !cache_.reserve(s.kv, n)) {
        // Short of blocks: whatever the pool can give after the running
        // sequences forgot what they may, a smaller chunk if need be.
        relieve_pressure(cache_.available_blocks() + static_cast<std::size_t>((n - room + block - 1) / block));
        n = std::min(n, room + static_cast<int>(cache_.available_blocks()) * block);
        if (n > room && !cache_.reserve(s.kv, n)) n = room;
      }
      s.batched = true;
      if (n == 0 && rows_added) break;  // the next step goes on
      if (n == 0) {
        s.preempt_cause = PreemptCause::KvCacheFull;
        finish(s, StopReason::Length, "preempted: the KV cache is full");
        return;
      }
    }
    for (int32_t pos = s.compute_at; pos < s.compute_at + n; ++pos) {
      const bool want = s.wants_prompt_row(pos);
      const int32_t token = s.request.prompt[static_cast<std::size_t>(pos)];
      // Every position of the probe region was probed: it resumes where its
      // probe stopped, with the same arithmetic as a row run from layer 0.
      if (!s.probe_residual.empty() && pos >= s.probe_region.begin && pos < s.probe_region.end) {
        const std::size_t at = static_cast<std::size_t>(pos - s.probe_region.begin) * n_embd;
        batch.add_resumed(token, pos, seq_index, slot_for(pos), want,
                          std::span<const float>(s.probe_residual).subspan(at, n_embd));
        s.prefill_flops += flops_.resumed(pos, batch.probe_layer);
      } else {
        const int32_t slot = slot_for(pos);
        batch.add(token, position_of(pos), seq_index, slot, want);
        s.prefill_flops += flops_.token(pos);
      }
      if (want) outputs.push_back({&s, pos});
    }
    rows_added = true;
    budget -= n;
    s.compute_at += n;
    if (s.compute_at == range.end && ++s.compute_range < s.compute.size())
      s.compute_at = s.compute[s.compute_range].begin;
  }
  if (s.compute_range == s.compute.size()) s.probe_residual = {};  // the batch holds what it needs
}

void Scheduler::sample_outputs(const std::vector<OutputRow>& outputs, std::span<float> logits) {
  const Tokenizer& tok = model_.tokenizer();
  score_outputs(outputs, logits);
  uint64_t produced = 0;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    Sequence& s = *outputs[o].seq;
    if (s.finished) continue;
    const int32_t prompt_pos = outputs[o].prompt_pos;
    if (prompt_pos >= 0 && prompt_pos + 1 < s.n_prompt) continue;  // scored, nothing to hand over
    const TokenEvent& ev = events_[o];
    s.history.push_back(ev.id);
    ++s.generated;
    ++produced;
    if (s.generated == 1) {
      s.first_token = Clock::now();
      std::lock_guard lock(mu_);
      const double ttft = seconds_between(s.submitted, s.first_token);
      if (ttft_samples_.size() < kTtftWindow) {
        ttft_samples_.push_back(ttft);
      } else {
        ttft_samples_[ttft_next_] = ttft;
        ttft_next_ = (ttft_next_ + 1) % kTtftWindow;
      }
    }
    const bool keep = !s.on_token || s.on_token(ev);
    if (!keep) {
      cancel_sequence(s, CancelCause::Client);
    } else if (s.request.stop_at_end_of_generation && tok.is_end_of_generation(ev.id)) {
      finish(s, StopReason::Stop);
    } else if (s.generated >= s.max_new) {
      finish(s, StopReason::Length);
    } else {
      s.pending = ev.id;
      s.has_pending = true;
    }
  }
  std::lock_guard lock(mu_);
  stats_.generated_tokens += produced;
}

void Scheduler::finish(Sequence& seq, StopReason reason, const std::string& note_or_error) {
  CLM_CHECK(!seq.finished, "a request finished twice");
  seq.finished = true;
  drop_promoted(seq);
  cache_.release(seq.kv);
  const auto now = Clock::now();
  RequestSummary sum;
  sum.id = seq.id;
  sum.prompt_tokens = seq.n_prompt;
  sum.cached_tokens = seq.reuse.cached();
  sum.reuse = seq.reuse;
  sum.reuse_map = std::move(seq.reuse_map);
  if (seq.budget) mark_evicted(sum.reuse_map, seq.budget->forgotten_prompt_ranges(seq.n_prompt));
  sum.prompt_logprobs = std::move(seq.prompt_logprobs);
  sum.blend_probed = seq.blend_probed;
  sum.prefill_flops = seq.prefill_flops;
  sum.generated_tokens = seq.generated;
  const bool was_admitted = seq.admitted != Clock::time_point{};
  sum.queue_s = seconds_between(seq.submitted, was_admitted ? seq.admitted : now);
  sum.time_to_first_token_s = seq.generated > 0 ? seconds_between(seq.submitted, seq.first_token) : 0.0;
  sum.total_s = seconds_between(seq.submitted, now);
  sum.stop_reason = reason;
  if (reason == StopReason::Error) {
    sum.error = note_or_error;
  } else {
    sum.note = note_or_error;
  }
  CLM_CHECK(reason != StopReason::Cancelled || seq.cancel_cause, "a cancellation without a cause");
  if (reason == StopReason::Cancelled) sum.cancel_cause = seq.cancel_cause;
  sum.preempt_cause = seq.preempt_cause;
  sum.evicted_tokens = seq.evicted_tokens();
  {
    // The snapshot is refreshed before anyone hears of the end, so that a
    // client reading /stats after its response sees its own request.
    std::lock_guard lock(mu_);
    ++stats_.requests_finished;
    stats_.prefill_flops += seq.prefill_flops;
    // Counted here, where each request ends exactly once.
    if (sum.cancel_cause) {
      ++stats_.cancelled;
      ++stats_.cancelled_by[static_cast<std::size_t>(*sum.cancel_cause)];
    }
    if (sum.preempt_cause) {
      ++stats_.preempted;
      ++stats_.preempted_by[static_cast<std::size_t>(*sum.preempt_cause)];
    }
    cache_stats_ = cache_.stats();
  }
  if (seq.on_done) seq.on_done(sum);
}

void Scheduler::remove_finished() {
  std::erase_if(running_, [](const SequencePtr& s) { return s->finished; });
}

void Scheduler::cancel_all() {
  std::deque<SequencePtr> queued;
  {
    std::lock_guard lock(mu_);
    queued.swap(queue_);
    cancelled_.clear();
  }
  for (auto& s : running_)
    if (!s->finished) cancel_sequence(*s, CancelCause::Shutdown);
  running_.clear();
  for (auto& s : queued) cancel_sequence(*s, CancelCause::Shutdown);
  std::lock_guard lock(mu_);
  stats_.running = 0;
  stats_.queued = static_cast<int>(queue_.size());
  cache_stats_ = cache_.stats();
}

}  // namespace clm
