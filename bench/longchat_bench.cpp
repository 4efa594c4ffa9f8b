#include "longchat_bench.h"

#include <cstdio>
#include <filesystem>
#include <string>

#include "cache/kv_pool.h"
#include "engine/kv_budget.h"
#include "model/model.h"
#include "util/thread_pool.h"

namespace clm {

namespace {

int blocks_of(int tokens, int block_size) { return (tokens + block_size - 1) / block_size; }

Status check(const LongchatBenchOptions& o) {
  if (o.sessions < 1 || o.turns < 1 || o.reply_tokens < 1 || o.engine.pool.block_size < 1 ||
      o.engine.scheduler.max_batch_tokens < 1 || o.growth < 2 || o.system_tokens < 2)
    return fail("bench longchat: sessions, turns, reply tokens and the block size must be positive, the growth at "
                "least 2, the system prompt at least 2 tokens");
  const int minimum = KvBudget::minimum_tokens(o.evict, o.engine.pool.block_size);
  if (o.kv_budget_tokens < minimum)
    return fail("bench longchat: a KV budget of " + std::to_string(o.kv_budget_tokens) +
                " tokens is below the least the eviction policy needs with blocks of " +
                std::to_string(o.engine.pool.block_size) + " (" + std::to_string(minimum) + ")");
  if (o.system_tokens >= o.kv_budget_tokens)
    return fail("bench longchat: the system prompt must be shorter than the KV budget");
  return {};
}

// A conversation is driven to its target when no turn was cut short, it
// is as long as the target, and (with a budget) it forgot something.
int reached(const SessionRun& run, int target, bool bounded) {
  int n = 0;
  for (const SessionOutcome& s : run.sessions)
    if (!s.cut_short && s.tokens >= target && (!bounded || s.evicted_tokens > 0)) ++n;
  return n;
}

SessionPlan plan_of(const LongchatBenchOptions& o, int user_tokens, bool bounded) {
  SessionPlan plan;
  plan.sessions = o.sessions;
  plan.system_tokens = o.system_tokens;
  plan.turns = o.turns;
  plan.user_tokens = user_tokens;
  plan.reply_tokens = o.reply_tokens;
  plan.share = true;
  plan.block_size = o.engine.pool.block_size;
  plan.max_batch_tokens = o.engine.scheduler.max_batch_tokens;
  plan.kv_budget_tokens = bounded ? o.kv_budget_tokens : 0;
  plan.evict = o.evict;
  return plan;
}

}  // namespace

Result<int> longchat_user_tokens(const LongchatBenchOptions& o) {
  const int target = o.growth * o.kv_budget_tokens;
  const int per_turn = (target - o.system_tokens + o.turns - 1) / o.turns;
  const int user = per_turn - o.reply_tokens;
  if (user < 1)
    return fail("bench longchat: " + std::to_string(o.turns) + " turns of " + std::to_string(o.reply_tokens) +
                " generated tokens leave no room for user tokens within " + std::to_string(target) +
                " tokens; use fewer turns or reply tokens");
  return user;
}

std::size_t longchat_bound_blocks(const LongchatBenchOptions& o) {
  const auto per_sequence = static_cast<std::size_t>(blocks_of(o.kv_budget_tokens, o.engine.pool.block_size) + 1);
  return static_cast<std::size_t>(o.sessions) * per_sequence +
         static_cast<std::size_t>(blocks_of(o.system_tokens, o.engine.pool.block_size));
}

Result<LongchatBenchResult> run_longchat_bench(const LongchatBenchOptions& o) {
  if (auto ok = check(o); !ok) return std::unexpected(ok.error());
  auto user = longchat_user_tokens(o);
  if (!user) return std::unexpected(user.error());
  auto model = Model::load(o.engine.load.model_path);
  if (!model) return fail(model.error().message);
  ThreadPool threads(o.engine.load.n_threads > 0 ? o.engine.load.n_threads : hardware_threads());
  LongchatBenchResult r;
  r.model = std::filesystem::path(o.engine.load.model_path).filename().string();  // no machine path in reports
  const ModelConfig& c = (*model)->config();
  r.block_bytes = KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, o.engine.pool.block_size, KvType::F16}.block_bytes();
  r.user_tokens = *user;
  r.target_tokens = o.growth * o.kv_budget_tokens;
  r.bound_blocks = longchat_bound_blocks(o);

  std::fprintf(stderr,
               "bench longchat: %d conversations of %d turns (%d user + %d generated tokens) over a %d-token "
               "system prompt, each growing to %d tokens; KV budget %d tokens (%s)\n",
               o.sessions, o.turns, r.user_tokens, o.reply_tokens, o.system_tokens, r.target_tokens,
               o.kv_budget_tokens, std::string(evict_kind_name(o.evict.kind)).c_str());
  std::fprintf(stderr, "bench longchat: bounded run\n");
  auto bounded = drive_sessions(**model, threads, plan_of(o, r.user_tokens, true));
  if (!bounded) return std::unexpected(bounded.error());
  r.bounded = std::move(*bounded);
  std::fprintf(stderr, "bench longchat: unbounded run\n");
  auto unbounded = drive_sessions(**model, threads, plan_of(o, r.user_tokens, false));
  if (!unbounded) return std::unexpected(unbounded.error());
  r.unbounded = std::move(*unbounded);
  r.bounded_reached = reached(r.bounded, r.target_tokens, true);
  r.unbounded_reached = reached(r.unbounded, r.target_tokens, false);
  if (!r.within_bound())
    std::fprintf(stderr, "bench longchat: the bounded run's peak (%zu KV blocks) is over the bound (%zu)\n",
                 r.bounded.peak_blocks, r.bound_blocks);
  return r;
}

}  // namespace clm
