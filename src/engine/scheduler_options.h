// SchedulerOptions: the user's settings of continuous batching (batch and
// queue sizes, the context), the reuse defaults of requests, session pins
// and self-managed context. Settings only: what the scheduler is handed to
// work with is SchedulerDeps (engine/scheduler_deps.h).
#pragma once

#include "cache/reuse_plan.h"
#include "engine/evict_policy.h"
#include "engine/kv_budget.h"
#include "engine/session_pins.h"

namespace clm {

struct SchedulerOptions {
  int max_batch_tokens = 512;   // tokens per forward call (decode + prefill chunks)
  int max_running = 16;         // sequences decoding at once
  int max_queued = 256;         // waiting requests; submit fails beyond this
  int n_ctx = 4096;             // most tokens one sequence may hold
  // How prompts reuse cached K/V unless a request says otherwise, and the
  // span search's limits (cache/reuse_plan.h).
  ReuseOptions reuse;
  // Conversations' pinned prefixes (engine/session_pins.h): their share
  // bound. A request that cannot get room otherwise takes it from the pins.
  SessionPinOptions session_pins;
  // Self-managed context: a sequence holds at most this many tokens of K/V
  // (0: no budget). One that would outgrow it forgets the blocks `evict`
  // picks instead of ending with StopReason::Length, and may then run past n_ctx
  // (positions keep growing; its KV blocks stay bounded). Such sequences
  // reuse at most an exact prefix (no shifted spans).
  int kv_budget_tokens = 0;
  // The eviction policy of budgeted sequences (its block_tokens is the KV
  // block size).
  EvictOptions evict;
  // What the kept tokens' positions become after a budgeted sequence
  // forgets (engine/kv_budget.h): kept, or compacted with K re-rotated.
  EvictPositions evict_positions = EvictPositions::Keep;
};

}  // namespace clm
