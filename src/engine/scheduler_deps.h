// SchedulerDeps: what a scheduler is handed besides its settings and the
// model, cache and threads it drives: the prompt typer and the storage
// tiers. The tiers are not owned and outlive the scheduler.
#pragma once

#include <memory>

#include "engine/prompt_typer.h"
#include "tier/tier_set.h"

namespace clm {

struct SchedulerDeps {
  // Types prompts for the cache's type guard and semantic granularity
  // (null: the splitter's default rules).
  std::shared_ptr<const PromptTyper> typer;
  // Storage tiers below RAM (null: none). submit() reads a prompt's missing
  // prefix blocks from them on the caller's thread, straight into pool
  // blocks the stepping thread reserves for it (scheduler_landing.cpp); the
  // stepping thread publishes them before admission (promote_queued).
  TierSet* tiers = nullptr;
};

}  // namespace clm
