// EngineOptions: everything a user sets about an engine, as one tree of the
// settings structs its parts take: the model load, the KV pool, the cache
// manager, the scheduler (with the reuse defaults of requests) and the
// storage tiers. The engine hands each part its struct unchanged;
// check_engine_options validates the whole tree once.
#pragma once

#include <string>

#include "cache/cache_options.h"
#include "engine/engine_load_options.h"
#include "engine/pool_options.h"
#include "engine/scheduler_options.h"
#include "tier/tier_options.h"
#include "util/error.h"

namespace clm {

struct EngineOptions {
  EngineLoadOptions load;
  PoolOptions pool;
  // cache.prefix_caching = false also forces requests' reuse mode off.
  CacheOptions cache;
  SchedulerOptions scheduler;
  // The semantic splitter's JSON rule file for the type guard and the
  // semantic block strategy (text/split_rules_file.h); empty: default rules.
  std::string split_rules;
  TierOptions tiers;
};

// The settings' own limits, checked before anything is loaded; what needs
// the model (a KV type its head size cannot hold) is checked at creation.
Status check_engine_options(const EngineOptions& options);

}  // namespace clm
