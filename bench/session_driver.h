// Many concurrent conversations driven through one scheduler, as `bench
// dialogue` (b) and `bench longchat` run them: every session starts from
// one system prompt and, turn after turn, sends its whole history plus a
// new user message and takes a fixed number of generated tokens as the
// reply. Measures generation throughput, time to first token and the KV
// blocks live sequences hold, at their peak.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/evict_policy.h"
#include "util/error.h"

namespace clm {

struct SessionPlan {
  int sessions = 32;
  int system_tokens = 1000;  // the shared system prompt, BOS included
  int turns = 2;             // user turns per session
  int user_tokens = 24;      // per user turn
  int reply_tokens = 16;     // generated per turn
  // Prefix caching on, the system prompt resident before the sessions
  // arrive (as in steady traffic); false: prefix caching off.
  bool share = true;
  int block_size = 32;
  int max_batch_tokens = 512;
  // Self-managed context: each request's KV budget (0: none) and policy.
  int kv_budget_tokens = 0;
  EvictOptions evict;
};

// One session at the end of the run.
struct SessionOutcome {
  int tokens = 0;          // its conversation's length: system prompt, turns and replies
  int evicted_tokens = 0;  // K/V slots its requests forgot, over all turns
  bool cut_short = false;  // a turn was preempted or generated less than its reply
};

struct SessionRun {
  double seconds = 0.0;
  long generated_tokens = 0;
  double tokens_per_s = 0.0;
  double ttft_p50_s = 0.0;
  double ttft_p95_s = 0.0;
  std::size_t peak_blocks = 0;   // blocks referenced by live sequences, at the peak (between steps)
  // At the same step: the live sequences' tokens in whole blocks, the shared
  // prompt once (without budgets; forgotten tokens are counted too).
  std::size_t ideal_blocks = 0;
  std::size_t pool_blocks = 0;   // the pool the run had
  long prompt_tokens = 0;
  long cached_tokens = 0;
  long evicted_tokens = 0;
  // The timed part is made of steps that prefill user turns (often with some
  // sessions decoding beside them) and steps that only decode; the second
  // kind alone is what a decode batch runs at.
  long prompt_tokens_computed = 0;   // by the forward passes: user turns, unshared prompt tails
  double decode_only_seconds = 0.0;  // in steps that computed no prompt token
  long decode_only_tokens = 0;       // generated in those steps
  double decode_only_tokens_per_s = 0.0;
  std::vector<SessionOutcome> sessions;
};

class Model;
class ThreadPool;

// The pool holds every session's whole conversation (and a few blocks more),
// so that only the budgets, if any, bound what the sequences hold.
Result<SessionRun> drive_sessions(Model& model, ThreadPool& threads, const SessionPlan& plan);

// The fields every report of a run shares (time, tokens, TTFT, peak KV).
nlohmann::json session_run_json(const SessionRun& run, std::size_t block_bytes);

}  // namespace clm
