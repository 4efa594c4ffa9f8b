#include "session_driver.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

#include "bench_stats.h"
#include "dialogue_text.h"
#include "model/model.h"
#include "scheduler_rig.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

struct Session {
  std::vector<int32_t> history;  // everything so far: system prompt, turns, replies
  int turn = 0;
  bool live = false;
  int live_tokens = 0;           // tokens its running request holds now, forgotten ones included
  SessionOutcome outcome;
};

Status check(const SessionPlan& p) {
  if (p.sessions < 1 || p.system_tokens < 2 || p.turns < 1 || p.user_tokens < 1 || p.reply_tokens < 1 ||
      p.block_size < 1 || p.max_batch_tokens < 1 || p.kv_budget_tokens < 0)
    return fail("bench: every session size must be positive (the system prompt at least 2 tokens)");
  return {};
}

}  // namespace

Result<SessionRun> drive_sessions(Model& model, ThreadPool& threads, const SessionPlan& p) {
  if (auto ok = check(p); !ok) return std::unexpected(ok.error());
  const Tokenizer& tok = model.tokenizer();
  const int bs = p.block_size;
  const int per_session = p.system_tokens + p.turns * (p.user_tokens + p.reply_tokens) + 1;
  RigOptions ro;
  ro.block_size = bs;
  ro.max_batch_tokens = p.max_batch_tokens;
  ro.n_blocks = static_cast<std::size_t>(p.sessions) * static_cast<std::size_t>(per_session / bs + 3) + 8;
  ro.prefix_caching = p.share;
  ro.max_running = p.sessions;
  ro.kv_budget_tokens = p.kv_budget_tokens;
  ro.evict = p.evict;
  auto rig = make_scheduler_rig(model, threads, ro);
  if (!rig) return std::unexpected(rig.error());
  Scheduler& sched = *rig->scheduler;

  std::vector<int32_t> system{tok.bos_id() >= 0 ? tok.bos_id() : 0};
  const auto s = dialogue_tokens(tok, p.system_tokens - 1, 7);
  system.insert(system.end(), s.begin(), s.end());
  if (p.share) {  // the shared prompt is resident before the sessions arrive, as in steady traffic
    if (auto w = run_to_end(sched, fixed_length_request(system, 1)); !w) return std::unexpected(w.error());
  }

  std::vector<Session> sessions(static_cast<std::size_t>(p.sessions));
  std::vector<double> ttfts;
  SessionRun run;
  run.pool_blocks = ro.n_blocks;
  std::vector<std::size_t> ready;  // sessions whose next turn should be submitted
  std::function<Status(std::size_t)> submit_turn = [&](std::size_t i) -> Status {
    Session& ss = sessions[i];
    const auto user = dialogue_tokens(tok, p.user_tokens, 100000u * static_cast<uint32_t>(i) + static_cast<uint32_t>(ss.turn));
    ss.history.insert(ss.history.end(), user.begin(), user.end());
    ss.live = true;
    ss.live_tokens = static_cast<int>(ss.history.size());
    auto id = sched.submit(
        fixed_length_request(ss.history, p.reply_tokens),
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
          run.evicted_tokens += sum.evicted_tokens;
          done.outcome.evicted_tokens += sum.evicted_tokens;
          if (sum.preempt_cause || sum.generated_tokens < p.reply_tokens) done.outcome.cut_short = true;
          if (++done.turn < p.turns) ready.push_back(i);
        });
    if (!id) return std::unexpected(id.error());
    return {};
  };

  // A failed submit stops the scheduler while the callbacks' state lives.
  auto stop_and_fail = [&](const Error& e) -> Result<SessionRun> {
    sched.stop();
    return std::unexpected(e);
  };
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    sessions[i].history = system;
    if (auto ok = submit_turn(i); !ok) return stop_and_fail(ok.error());
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
      const int own = ss.live_tokens - (p.share ? p.system_tokens : 0);
      ideal += static_cast<std::size_t>((own + bs - 1) / bs);
    }
    if (p.share && any_live) ideal += static_cast<std::size_t>((p.system_tokens + bs - 1) / bs);
    if (cs.blocks_used > run.peak_blocks) {
      run.peak_blocks = cs.blocks_used;
      run.ideal_blocks = ideal;
    }
    for (std::size_t i : std::exchange(ready, {}))
      if (auto ok = submit_turn(i); !ok) return stop_and_fail(ok.error());
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
  for (Session& ss : sessions) {
    ss.outcome.tokens = static_cast<int>(ss.history.size());
    run.sessions.push_back(ss.outcome);
  }
  return run;
}

nlohmann::json session_run_json(const SessionRun& s, std::size_t block_bytes) {
  return {{"seconds", s.seconds},
          {"generated_tokens", s.generated_tokens},
          {"tokens_per_second", s.tokens_per_s},
          {"ttft_p50_ms", s.ttft_p50_s * 1e3},
          {"ttft_p95_ms", s.ttft_p95_s * 1e3},
          {"prompt_tokens", s.prompt_tokens},
          {"cached_tokens", s.cached_tokens},
          {"prompt_tokens_computed", s.prompt_tokens_computed},
          {"peak_kv_blocks", s.peak_blocks},
          {"peak_kv_mib", static_cast<double>(s.peak_blocks * block_bytes) / (1 << 20)}};
}

}  // namespace clm
