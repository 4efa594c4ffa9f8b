// `clmcache bench dialogue`: what prefix caching buys in conversations.
// (a) A long customer-service history plus a short new question: time to
// first token with a cold cache vs with the history cached, alternated in
// one run. (b) Many concurrent sessions sharing one long system prompt, each
// with its own turns: throughput, time to first token p50/p95, and peak KV
// memory with sharing vs without, against the ideal (one copy of the shared
// prompt plus each session's own tokens, in whole blocks).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine_options.h"
#include "bench_stats.h"
#include "session_driver.h"
#include "util/error.h"

namespace clm {

struct DialogueBenchOptions {
  // The model, threads, KV block size and batch size (clmcache bench's
  // shared flags); the benchmark sets the rest of the engine itself.
  EngineOptions engine;
  // (a)
  int history_tokens = 842;
  int question_tokens = 28;
  int repetitions = 5;
  // (b)
  int sessions = 32;
  int system_tokens = 1000;
  int turns = 2;          // user turns per session
  int user_tokens = 24;   // per user turn
  int reply_tokens = 16;  // generated per turn
};

struct DialogueBenchResult {
  std::string model;
  std::size_t block_bytes = 0;
  Summary cold_ttft_s;
  Summary warm_ttft_s;
  int warm_cached_tokens = 0;
  SessionRun shared;
  SessionRun unshared;
};

class Model;
class ThreadPool;

Result<DialogueBenchResult> run_dialogue_bench(const DialogueBenchOptions& options);
// Part (b) alone: options.sessions sessions over one system prompt, shared
// (the prompt resident first) or not (prefix caching off).
Result<SessionRun> run_sessions(Model& model, ThreadPool& threads, const DialogueBenchOptions& options, bool share);
nlohmann::json to_json(const DialogueBenchOptions& options, const DialogueBenchResult& result);
std::string to_markdown(const DialogueBenchOptions& options, const DialogueBenchResult& result);

}  // namespace clm
