// Flags shared by the commands that load a model (run, chat and serve),
// parsed straight into the engine's and sampler's option structs: each flag
// writes the EngineOptions field it names, so the structs' defaults are the
// flags' defaults and nothing is copied in between.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "app/tier_flags.h"
#include "engine/engine.h"
#include "model/sampler.h"

namespace clm {

struct EngineFlags {
  std::string model;  // resolved by load_engine (model_source.h)
  bool mmap = false;  // --mmap: the weights used in place (FileLoad::Map)
  // --blend-ratio: a share in [0, 1], or "auto" for the adaptive choice;
  // written into options.reuse by load_engine. Empty: options.reuse's own.
  std::string blend_ratio;
  EngineOptions options;
  TierFlags tiers;  // --redis, --redis-ttl
};

void add_engine_flags(CLI::App& cmd, EngineFlags& flags);
// --max-batch-tokens, for the commands that batch many requests (serve,
// chat); `run` sizes its batch with --prefill-chunk instead.
void add_batch_flag(CLI::App& cmd, EngineFlags& flags);
void add_sampler_flags(CLI::App& cmd, SamplerParams& params);

// Resolves the model (see model_source.h) and builds the engine; with
// show_progress, a progress bar on stderr for slow loads.
Result<std::unique_ptr<Engine>> open_engine(const EngineFlags& flags, bool show_progress, EngineDeps deps = {});
// open_engine with the bar, for the CLI: errors are printed; nullptr on failure.
std::unique_ptr<Engine> load_engine(const EngineFlags& flags, EngineDeps deps = {});

}  // namespace clm
