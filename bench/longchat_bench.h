// `clmcache bench longchat`: many concurrent conversations that each grow to
// several times their KV budget (issue 12, self-managed context). The same
// conversations run twice in one invocation: with a per-sequence KV budget
// (the sequences forget what the eviction policy picks) and unbounded (no
// budget, a pool that holds everything). Reported per run: peak KV blocks
// held by live sequences against the bound the budgets promise (the sum of
// the budgets, the shared system prompt once and one block per sequence of
// slack), generated tokens per second, time to first token p50/p95 and the
// tokens forgotten; and bounded over unbounded for memory, throughput and
// time to first token. Conversations are driven as in `bench dialogue` (b)
// (session_driver.h): each turn resends the whole history.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine_options.h"
#include "engine/evict_policy.h"
#include "session_driver.h"
#include "util/error.h"

namespace clm {

struct LongchatBenchOptions {
  // The model, threads, KV block size and batch size (clmcache bench's
  // shared flags); the benchmark sets the rest of the engine itself.
  EngineOptions engine;
  int sessions = 32;
  int kv_budget_tokens = 256;  // per sequence, in the bounded run
  int growth = 4;              // each conversation grows to this many times the budget
  int turns = 8;               // user turns per conversation
  int system_tokens = 64;      // the shared system prompt, BOS included
  int reply_tokens = 32;       // generated per turn
  EvictOptions evict;          // the bounded run's policy (kind and settings)
};

struct LongchatBenchResult {
  std::string model;
  std::size_t block_bytes = 0;
  int user_tokens = 0;    // per turn, so that the last turn reaches the target
  int target_tokens = 0;  // growth x budget
  std::size_t bound_blocks = 0;
  SessionRun bounded;
  SessionRun unbounded;
  // Conversations that reached the target with no turn cut short (and, in
  // the bounded run, having forgotten something).
  int bounded_reached = 0;
  int unbounded_reached = 0;
  bool within_bound() const { return bounded.peak_blocks <= bound_blocks; }
};

// Tokens of each user turn: the conversation (system prompt, turns of user
// and reply tokens) reaches growth x budget at its last turn. Fails when
// the replies alone would overshoot it.
Result<int> longchat_user_tokens(const LongchatBenchOptions& options);
// The most KV blocks the bounded run's live sequences may hold at once.
std::size_t longchat_bound_blocks(const LongchatBenchOptions& options);

Result<LongchatBenchResult> run_longchat_bench(const LongchatBenchOptions& options);
nlohmann::json to_json(const LongchatBenchOptions& options, const LongchatBenchResult& result);
std::string to_markdown(const LongchatBenchOptions& options, const LongchatBenchResult& result);

}  // namespace clm
