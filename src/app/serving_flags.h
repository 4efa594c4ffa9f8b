// The flags of a process that serves generations from one engine, with
// sessions and chat, whether or not it listens on a socket: `serve` adds
// its network flags on top, and the Python module parses its keyword
// arguments with these (a keyword is a flag's long name in snake_case), so
// that both accept the same settings with the same checks and defaults.
#pragma once

#include <CLI/CLI.hpp>

#include "app/chat_flags.h"
#include "app/cli_flags.h"
#include "app/server_context.h"
#include "model/sampler.h"
#include "util/error.h"

namespace clm {

struct ServingFlags {
  EngineFlags engine;
  SamplerParams sampler;  // the defaults of requests that do not say
  ServerOptions server;
  ChatTemplateFlags chat;
  bool persist_sessions = false;  // --persist-sessions: sessions kept beside the disk cache
};

void add_serving_flags(CLI::App& cmd, ServingFlags& flags);

// The rules between flags that CLI11 does not express.
Status check_serving_flags(const ServingFlags& flags);

// What follows from the loaded engine: the model's id, the sampler
// defaults, max_tokens bounds, the vocabulary and the prompt's byte bound.
void fit_server_options(ServingFlags& flags, Engine& engine);

}  // namespace clm
