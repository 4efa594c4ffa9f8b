#include "dialogue_bench.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "cache/kv_pool.h"
#include "dialogue_text.h"
#include "engine/scheduler.h"
#include "model/model.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

// One model, a fresh pool/cache/scheduler per scenario so scenarios never
// see each other's cached blocks.
struct Rig {
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<KvCacheManager> cache;
  std::unique_ptr<Scheduler> scheduler;
};

Result<Rig> make_rig(Model& model, ThreadPool& threads, const DialogueBenchOptions& o, std::size_t n_blocks,
                     bool prefix_caching, int max_running) {
  const ModelConfig& c = model.config();
  KvGeometry g{c.n_layers, c.n_kv_heads, c.head_dim, o.block_size, KvType::F16};
  auto pool = KvPool::create(g, n_blocks);
  if (!pool) return std::unexpected(pool.error());
  Rig rig;
  rig.pool = std::move(*pool);
  CacheOptions co;
  co.prefix_caching = prefix_caching;
  rig.cache = std::make_unique<KvCacheManager>(*rig.pool, /*model_fingerprint=*/1, co);
  SchedulerOptions so;
  so.max_batch_tokens = o.max_batch_tokens;
  so.max_running = max_running;
  so.max_queued = 4096;
  so.n_ctx = 1 << 20;
  rig.scheduler = std::make_unique<Scheduler>(model, *rig.cache, threads, so);
  return rig;
}

Request greedy_request(std::vector<int32_t> prompt, int max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.stop_at_end_of_generation = false;  // fixed amount of work per turn
  r.sampler.temperature = 0.0f;
  return r;
}

// Runs one request to completion on this thread; returns its summary.
Result<RequestSummary> run_one(Scheduler& s, Request r) {
  RequestSummary out;
  auto id = s.submit(std::move(r), [](const TokenEvent&) { return true; },
                     [&out](const RequestSummary& summary) { out = summary; });
  if (!id) return std::unexpected(id.error());
  s.run_until_idle();
  if (out.stop_reason == "error") return fail("bench: request failed: " + out.error);
  return out;
}

std::vector<int32_t> concat(std::initializer_list<const std::vector<int32_t>*> parts) {
  std::vector<int32_t> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

Status time_to_first_token(Model& model, ThreadPool& threads, const DialogueBenchOptions& o, DialogueBenchResult& r) {
  const Tokenizer& tok = model.tokenizer();
  const int total = 1 + o.history_tokens + o.question_tokens;
  auto rig = make_rig(model, threads, o, static_cast<std::size_t>(4 * (total / o.block_size + 2)), true, 4);
  if (!rig) return std::unexpected(rig.error());
  std::vector<int32_t> history{tok.bos_id() >= 0 ? tok.bos_id() : 0};
  const auto h = dialogue_tokens(tok, o.history_tokens, 1);
  history.insert(history.end(), h.begin(), h.end());
  std::vector<double> cold, warm;
  for (int rep = 0; rep < o.repetitions; ++rep) {
    // Cold: nothing resident.
    rig->cache->clear_cached();
    const auto q1 = question_tokens(tok, o.question_tokens, 2 * rep);
    auto c = run_one(*rig->scheduler, greedy_request(concat({&history, &q1}), 1));
    if (!c) return std::unexpected(c.error());
    cold.push_back(c->time_to_first_token_s);
    // Warm: the history is resident from the previous turn; a new question follows it.
    const auto q2 = question_tokens(tok, o.question_tokens, 2 * rep + 1);
    auto w = run_one(*rig->scheduler, greedy_request(concat({&history, &q2}), 1));
    if (!w) return std::unexpected(w.error());
    warm.push_back(w->time_to_first_token_s);
    r.warm_cached_tokens = w->cached_tokens;
  }
  r.cold_ttft_s = summarize(cold);
  r.warm_ttft_s = summarize(warm);
  return {};
}

struct Session {
  std::vector<int32_t> history;  // everything so far: system prompt, turns, replies
  int turn = 0;
  bool live = false;
  int live_tokens = 0;           // tokens its running request holds now
};

}  // namespace

Result<SessionRun> run_sessions(Model& model, ThreadPool& threads, const DialogueBenchOptions& o, bool share) {
  const Tokenizer& tok = model.tokenizer();
  const int bs = o.block_size;
  const int per_session = o.system_tokens + o.turns * (o.user_tokens + o.reply_tokens) + 1;
  const std::size_t n_blocks = static_cast<std::size_t>(o.sessions) * static_cast<std::size_t>(per_session / bs + 3) + 8;
  auto rig = make_rig(model, threads, o, n_blocks, share, o.sessions);
  if (!rig) return std::unexpected(rig.error());
  Scheduler& sched = *rig->scheduler;

  std::vector<int32_t> system{tok.bos_id() >= 0 ? tok.bos_id() : 0};
  const auto s = dialogue_tokens(tok, o.system_tokens - 1, 7);
  system.insert(system.end(), s.begin(), s.end());
  if (share) {  // the shared prompt is resident before the sessions arrive, as in steady traffic
    if (auto w = run_one(sched, greedy_request(system, 1)); !w) return std::unexpected(w.error());
  }

  std::vector<Session> sessions(static_cast<std::size_t>(o.sessions));
  std::vector<double> ttfts;
  SessionRun run;
  std::vector<std::size_t> ready;  // sessions whose next turn should be submitted
  std::function<Status(std::size_t)> submit_turn = [&](std::size_t i) -> Status {
    Session& ss = sessions[i];
    const auto user = dialogue_tokens(tok, o.user_tokens, 100000u * static_cast<uint32_t>(i) + static_cast<uint32_t>(ss.turn));
    ss.history.insert(ss.history.end(), user.begin(), user.end());
    ss.live = true;
    ss.live_tokens = static_cast<int>(ss.history.size());
    auto id = sched.submit(
        greedy_request(ss.history, o.reply_tokens),
        [&ss](const TokenEvent& t) {
          ss.history.push_back(t.id);
          ++ss.live_tokens;
          return true;
        },
        [&, i](const RequestSummary& sum) {
          Session& done = sessions[i];
          done.live = false;
          ttfts.push_back(sum.time_to_first_token_s);
          run.generated_tokens += sum.generated_tokens;
          run.prompt_tokens += sum.prompt_tokens;
          run.cached_tokens += sum.cached_tokens;
          if (++done.turn < o.turns) ready.push_back(i);
        });
    if (!id) return std::unexpected(id.error());
    return {};
  };

  for (std::size_t i = 0; i < sessions.size(); ++i) {
    sessions[i].history = system;
    if (auto ok = submit_turn(i); !ok) return std::unexpected(ok.error());
  }
  const auto t0 = Clock::now();
  const uint64_t computed_at_start = sched.stats().prompt_tokens_computed;
  for (;;) {
    const SchedulerStats before = sched.stats();
    const auto step_start = Clock::now();
    const bool worked = sched.step();
    const double step_s = std::chrono::duration<double>(Clock::now() - step_start).count();
    const SchedulerStats after = sched.stats();
    if (after.prompt_tokens_computed == before.prompt_tokens_computed &&
        after.generated_tokens > before.generated_tokens) {
      run.decode_only_seconds += step_s;
      run.decode_only_tokens += static_cast<long>(after.generated_tokens - before.generated_tokens);
    }
    // Memory at this step against the ideal for exactly the live sequences.
    const CacheStats cs = rig->cache->stats();
    std::size_t ideal = 0;
    bool any_live = false;
    for (const Session& ss : sessions) {
      if (!ss.live) continue;
      any_live = true;
      const int own = ss.live_tokens - (share ? o.system_tokens : 0);
      ideal += static_cast<std::size_t>((own + bs - 1) / bs);
    }
    if (share && any_live) ideal += static_cast<std::size_t>((o.system_tokens + bs - 1) / bs);
    if (cs.blocks_used > run.peak_blocks) {
      run.peak_blocks = cs.blocks_used;
      run.ideal_blocks = ideal;
    }
    for (std::size_t i : std::exchange(ready, {}))
      if (auto ok = submit_turn(i); !ok) return std::unexpected(ok.error());
    if (!worked && ready.empty()) {
      bool any = false;
      for (const Session& ss : sessions) any = any || ss.live;
      if (!any) break;
    }
  }
  run.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  run.tokens_per_s = static_cast<double>(run.generated_tokens) / run.seconds;
  run.prompt_tokens_computed = static_cast<long>(sched.stats().prompt_tokens_computed - computed_at_start);
  if (run.decode_only_seconds > 0.0)
    run.decode_only_tokens_per_s = static_cast<double>(run.decode_only_tokens) / run.decode_only_seconds;
  run.ttft_p50_s = percentile(ttfts, 50);
  run.ttft_p95_s = percentile(ttfts, 95);
  return run;
}

Result<DialogueBenchResult> run_dialogue_bench(const DialogueBenchOptions& o) {
  if (o.history_tokens < 1 || o.question_tokens < 1 || o.sessions < 1 || o.system_tokens < 2 || o.turns < 1 ||
      o.user_tokens < 1 || o.reply_tokens < 1 || o.repetitions < 1 || o.block_size < 1)
    return fail("bench dialogue: every size must be positive");
  auto model = Model::load(o.model_path);
  if (!model) return fail(model.error().message);
  ThreadPool threads(o.n_threads > 0 ? o.n_threads : hardware_threads());
  DialogueBenchResult r;
  r.model = std::filesystem::path(o.model_path).filename().string();  // no machine path in reports
  const ModelConfig& c = (*model)->config();
  r.block_bytes = KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, o.block_size, KvType::F16}.block_bytes();

  std::fprintf(stderr, "bench dialogue (a): %d-token history + %d-token question, %d repetitions\n",
               o.history_tokens, o.question_tokens, o.repetitions);
  if (auto ok = time_to_first_token(**model, threads, o, r); !ok) return std::unexpected(ok.error());
  std::fprintf(stderr, "bench dialogue (b): %d sessions sharing a %d-token system prompt, with sharing\n", o.sessions,
               o.system_tokens);
  auto shared = run_sessions(**model, threads, o, true);
  if (!shared) return std::unexpected(shared.error());
  r.shared = *shared;
  std::fprintf(stderr, "bench dialogue (b): the same without sharing\n");
  auto unshared = run_sessions(**model, threads, o, false);
  if (!unshared) return std::unexpected(unshared.error());
  r.unshared = *unshared;
  return r;
}

namespace {
nlohmann::json session_json(const SessionRun& s, std::size_t block_bytes) {
  return {{"seconds", s.seconds},
          {"generated_tokens", s.generated_tokens},
          {"tokens_per_second", s.tokens_per_s},
          {"ttft_p50_ms", s.ttft_p50_s * 1e3},
          {"ttft_p95_ms", s.ttft_p95_s * 1e3},
          {"prompt_tokens", s.prompt_tokens},
          {"cached_tokens", s.cached_tokens},
          {"prompt_tokens_computed", s.prompt_tokens_computed},
          {"decode_only_tokens_per_second", s.decode_only_tokens_per_s},
          {"peak_kv_blocks", s.peak_blocks},
          {"peak_kv_mib", static_cast<double>(s.peak_blocks * block_bytes) / (1 << 20)},
          {"ideal_kv_blocks_at_peak", s.ideal_blocks}};
}
}  // namespace

nlohmann::json to_json(const DialogueBenchOptions& o, const DialogueBenchResult& r) {
  return {{"model", r.model},
          {"block_size", o.block_size},
          {"ttft",
           {{"history_tokens", o.history_tokens},
            {"question_tokens", o.question_tokens},
            {"cold_ms_median", r.cold_ttft_s.median * 1e3},
            {"warm_ms_median", r.warm_ttft_s.median * 1e3},
            {"warm_over_cold", r.warm_ttft_s.median / r.cold_ttft_s.median},
            {"warm_cached_tokens", r.warm_cached_tokens}}},
          {"sessions",
           {{"sessions", o.sessions},
            {"system_tokens", o.system_tokens},
            {"turns", o.turns},
            {"with_sharing", session_json(r.shared, r.block_bytes)},
            {"without_sharing", session_json(r.unshared, r.block_bytes)},
            {"memory_with_over_without",
             static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.unshared.peak_blocks)},
            {"memory_with_over_ideal",
             static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.shared.ideal_blocks)}}}};
}

std::string to_markdown(const DialogueBenchOptions& o, const DialogueBenchResult& r) {
  char buf[4096];
  const double mib = static_cast<double>(r.block_bytes) / (1 << 20);
  std::snprintf(
      buf, sizeof buf,
      "### (a) time to first token, %d-token history + %d-token question (median of %d)\n\n"
      "| cache | TTFT (ms) | tokens reused |\n|---|---:|---:|\n"
      "| cold | %.1f | 0 |\n| history cached | %.1f | %d |\n\n**warm / cold = %.3f**\n\n"
      "### (b) %d sessions sharing a %d-token system prompt, %d turns each\n\n"
      "| | generated tok/s | TTFT p50 (ms) | TTFT p95 (ms) | peak KV blocks | peak KV MiB | ideal blocks |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n"
      "| with sharing | %.1f | %.1f | %.1f | %zu | %.1f | %zu |\n"
      "| without sharing | %.1f | %.1f | %.1f | %zu | %.1f | %zu |\n\n"
      "**KV memory with sharing / without = %.3f; with sharing / ideal = %.3f**\n",
      o.history_tokens, o.question_tokens, o.repetitions, r.cold_ttft_s.median * 1e3, r.warm_ttft_s.median * 1e3,
      r.warm_cached_tokens, r.warm_ttft_s.median / r.cold_ttft_s.median, o.sessions, o.system_tokens, o.turns,
      r.shared.tokens_per_s, r.shared.ttft_p50_s * 1e3, r.shared.ttft_p95_s * 1e3, r.shared.peak_blocks,
      static_cast<double>(r.shared.peak_blocks) * mib, r.shared.ideal_blocks, r.unshared.tokens_per_s,
      r.unshared.ttft_p50_s * 1e3, r.unshared.ttft_p95_s * 1e3, r.unshared.peak_blocks,
      static_cast<double>(r.unshared.peak_blocks) * mib, r.unshared.ideal_blocks,
      static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.unshared.peak_blocks),
      static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.shared.ideal_blocks));
  return buf;
}

}  // namespace clm
