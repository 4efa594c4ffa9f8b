// `clmcache bench dialogue --scaling 1,8,32,64`: how generation throughput
// grows with the number of concurrent sessions over one shared system prompt
// (part (b) with sharing, once per session count), beside the rate the same
// model reaches on a 32-token prefill batch (`bench model -p 32`) measured in
// the same run: decode batches of N sessions run the same matmuls on N rows,
// so that rate is what batched decoding can approach.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dialogue_bench.h"

namespace clm {

struct DialogueScalingRow {
  int sessions = 0;
  SessionRun run;
};

struct DialogueScalingResult {
  std::string model;
  double prefill32_tokens_per_s = 0.0;  // median of the repetitions
  std::vector<DialogueScalingRow> rows;
};

Result<DialogueScalingResult> run_dialogue_scaling(const DialogueBenchOptions& options,
                                                   const std::vector<int>& session_counts);
nlohmann::json to_json(const DialogueBenchOptions& options, const DialogueScalingResult& result);
std::string to_markdown(const DialogueBenchOptions& options, const DialogueScalingResult& result);

}  // namespace clm
