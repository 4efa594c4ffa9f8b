// Flags shared by the commands that load a model (run, chat and serve),
// parsed into the engine's and sampler's option structs.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

#include "app/tier_flags.h"
#include "cache/reuse_plan.h"
#include "engine/engine.h"
#include "model/sampler.h"

namespace clm {

struct EngineFlags {
  std::string model;
  int n_ctx = 4096;
  int n_threads = 0;
  std::string kv_type = "f16";
  int block_size = 32;
  int max_batch_tokens = 512;
  bool no_prefix_cache = false;
  bool mmap = false;
  std::size_t kv_memory_mb = 0;
  int parallel = 16;
  uint32_t cache_hot_after = 2;
  double cache_ttl = 0.0;
  int max_queued = 256;  // set by serve's --max-queued
  // --reuse and its span-search limits; the defaults are ReuseOptions'.
  std::string reuse_mode = std::string(to_string(ReuseOptions{}.mode));
  // --blend-ratio: a share in [0, 1], or "auto" for the adaptive choice.
  std::string blend_ratio = "0.15";
  ReuseOptions reuse;
  TierFlags tiers;  // --redis, --redis-ttl
};

void add_engine_flags(CLI::App& cmd, EngineFlags& flags);
void add_sampler_flags(CLI::App& cmd, SamplerParams& params);

// Resolves the model (see model_source.h), shows a progress bar for slow
// loads, and builds the engine. Errors are printed; nullptr on failure.
std::unique_ptr<Engine> load_engine(const EngineFlags& flags);

}  // namespace clm
