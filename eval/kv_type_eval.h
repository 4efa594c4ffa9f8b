// `clmcache eval kv-type`: what storing K/V in another type (q8_0, f32)
// changes in what the model predicts, against a reference type (f16). Per
// case, with reuse off and an empty cache, the reference engine generates
// the greedy continuation C of the ask (or takes the case's reference
// text); both engines then score ask + C teacher-forced. Over the positions
// of C: KL(reference || tested) of the next-token distributions, top-1
// agreement, and the mean negative log-likelihood of C under each (ΔNLL =
// tested - reference); also how many of the tested engine's own greedy
// tokens match the reference's. A set of plain texts (the eviction sets)
// works the same way, each text's first tokens the ask and the rest the
// reference: every position of long prose scored.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "distribution_metrics.h"
#include "evict_cases.h"
#include "engine/engine_options.h"
#include "kernels/kv_type.h"
#include "reuse_cases.h"
#include "util/error.h"

namespace clm {

struct KvTypeEvalOptions {
  // The model, threads and block size; the evaluation sets the context and
  // each engine's K/V types.
  EngineOptions engine;
  KvTypes reference = KvType::F16;
  KvTypes tested = KvType::Q8_0;
  int greedy_tokens = 32;  // the continuation when a case has no reference text
  int text_ask_tokens = 32;  // with a set of texts: tokens of each text that form the ask
  int n_ctx = 0;           // 0: the model's training context
  std::function<void(std::size_t, std::size_t)> on_case;  // after each case (index, total)
};

struct KvTypeEvalResult {
  std::string model;
  std::string case_set;
  std::string reference;  // kv_types_text
  std::string tested;
  int cases = 0;
  int positions = 0;  // teacher-forced positions scored, over all cases
  int top1_agree = 0;
  KlSummary kl;
  std::string worst_case;  // the case holding the largest KL
  double nll_reference = 0.0;  // mean over positions, nats
  double nll_tested = 0.0;
  long greedy_match = 0;  // tested greedy tokens matching the reference's, summed over cases
  long greedy_total = 0;
  double top1() const { return positions == 0 ? 0.0 : static_cast<double>(top1_agree) / positions; }
};

Result<KvTypeEvalResult> run_kv_type_eval(const KvTypeEvalOptions& options, const ReuseCaseSet& cases);
Result<KvTypeEvalResult> run_kv_type_eval(const KvTypeEvalOptions& options, const EvictCaseSet& texts);

std::string to_markdown(const KvTypeEvalResult& r);
nlohmann::json to_json(const KvTypeEvalResult& r);

}  // namespace clm
