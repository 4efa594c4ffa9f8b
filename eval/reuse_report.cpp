#include "reuse_report.h"

#include <cmath>
#include <cstdio>
#include <string_view>

#include "report_numbers.h"
#include "util/float_decimal.h"

namespace clm {

namespace {

using nlohmann::json;

json counts_json(const ReuseCounts& c) {
  return {{"prefix", c.prefix}, {"shift", c.shift}, {"recomputed", c.recomputed}, {"computed", c.computed}};
}

// JSON has no infinity; an infinite KL (the reuse run gave a token no mass)
// is written as null.
json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// The share as set (a float): its shortest decimal, 0.15 rather than the
// widened 0.15000000596046448.
json blend_ratio_json(const ReuseVariant& v) {
  if (v.mode != ReuseMode::Blend) return nullptr;
  return v.blend.adaptive ? json("auto") : json(as_shortest_decimal(v.blend.ratio));
}

json summary_json(const ReuseVariant& v, const ReuseVariantSummary& s) {
  return {{"name", v.name()},
          {"mode", std::string(to_string(v.mode))},
          {"lead", v.lead},
          {"blend_ratio", blend_ratio_json(v)},
          {"cases", s.cases},
          {"positions", s.positions},
          {"scored_positions", s.scored()},
          {"missing_positions", s.missing},
          {"kl_mean", number(s.kl.mean())},
          {"kl_max", number(s.kl.max)},
          {"worst_case", s.worst_case},
          {"top1_agreement", s.top1()},
          {"greedy_match_tokens", s.greedy_match},
          {"greedy_total_tokens", s.greedy_total},
          {"greedy_exact_cases", s.greedy_exact_cases},
          {"tokens", counts_json(s.counts)},
          {"unchanged_tokens", s.unchanged},
          {"unchanged_reused_tokens", s.unchanged_reused},
          {"unchanged_reused_share", s.unchanged_reused_share()},
          {"count_mismatches", s.count_mismatches},
          {"prefill_flops", s.flops},
          {"full_prefill_flops", s.full_flops},
          {"prefill_flops_share", s.flops_share()},
          {"blend_probed_tokens", s.probed},
          {"linear_flops_share_at_32_layers", s.linear_share_32}};
}

json case_json(const ReuseEvalResult& r, const ReuseCaseResult& c) {
  json variants = json::object();
  for (std::size_t k = 0; k < c.variants.size(); ++k) {
    const ReuseVariantCase& v = c.variants[k];
    variants[r.variants[k].name()] = {{"positions", v.positions},
                                      {"missing_positions", v.missing},
                                      {"top1_agree", v.top1_agree},
                                      {"kl_mean", number(v.kl.mean())},
                                      {"kl_max", number(v.kl.max)},
                                      {"greedy_match_tokens", v.greedy_match},
                                      {"tokens", counts_json(v.counts)},
                                      {"computed_rows", v.computed_rows},
                                      {"unchanged_reused_tokens", v.unchanged_reused},
                                      {"prefill_flops", v.flops},
                                      {"blend_probed_tokens", v.probed}};
  }
  return {{"id", c.id},
          {"note", c.note},
          {"warm_tokens", c.warm_tokens},
          {"ask_tokens", c.ask_tokens},
          {"continuation_tokens", c.continuation_tokens},
          {"greedy_tokens", c.greedy_tokens},
          {"unchanged_tokens", c.unchanged_tokens},
          {"full_prefill_flops", c.full_flops},
          {"variants", variants}};
}

}  // namespace

json to_json(const ReuseEvalResult& r) {
  json variants = json::array();
  for (std::size_t k = 0; k < r.variants.size(); ++k) variants.push_back(summary_json(r.variants[k], r.summary[k]));
  json cases = json::array();
  for (const auto& c : r.cases) cases.push_back(case_json(r, c));
  return {{"model", r.model},
          {"case_set", r.case_set},
          {"case_set_description", r.case_set_description},
          {"kv_type", r.kv_type},
          {"n_vocab", r.n_vocab},
          {"n_ctx", r.n_ctx},
          {"block_size", r.block_size},
          {"min_reuse_tokens", r.min_reuse_tokens},
          {"greedy_tokens", r.greedy_tokens},
          {"variants", variants},
          {"cases", cases}};
}

std::string to_markdown(const ReuseEvalResult& r) {
  std::string out;
  out += "### Reuse quality: " + r.case_set + " (" + std::to_string(r.cases.size()) + " cases)\n\n";
  if (!r.case_set_description.empty()) out += r.case_set_description + "\n\n";
  out += "model `" + r.model + "`, KV " + r.kv_type + ", block " + std::to_string(r.block_size) +
         " tokens, min reuse " + std::to_string(r.min_reuse_tokens) + " tokens, greedy continuation " +
         std::to_string(r.greedy_tokens) + " tokens\n\n";
  out +=
      "| mode | mean KL | max KL | top-1 | scored (missing) | greedy match | exact greedy | prefix / shift / "
      "recomputed / computed | unchanged reused | prefill FLOPs | linear FLOPs at 32 layers |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  int mismatches = 0;
  for (std::size_t k = 0; k < r.variants.size(); ++k) {
    const ReuseVariantSummary& s = r.summary[k];
    mismatches += s.count_mismatches;
    const double match = s.greedy_total == 0 ? 0.0 : static_cast<double>(s.greedy_match) / static_cast<double>(s.greedy_total);
    out += "| " + r.variants[k].name() + " | " + sci(s.kl.mean()) + " | " + sci(s.kl.max) + " | " +
           format("%.4f", s.top1()) + " | " + std::to_string(s.scored()) + " (" + std::to_string(s.missing) + ") | " +
           pct(match) + " | " + std::to_string(s.greedy_exact_cases) + "/" + std::to_string(s.cases) + " | " +
           std::to_string(s.counts.prefix) + " / " + std::to_string(s.counts.shift) + " / " +
           std::to_string(s.counts.recomputed) + " / " + std::to_string(s.counts.computed) + " | " +
           pct(s.unchanged_reused_share()) + " | " + pct(s.flops_share()) + " | " + pct(s.linear_share_32) + " |\n";
  }
  out += "\n";
  for (std::size_t k = 0; k < r.variants.size(); ++k)
    if (!r.summary[k].worst_case.empty() && r.summary[k].kl.max > 0.0)
      out += "- " + r.variants[k].name() + ": largest KL in case `" + r.summary[k].worst_case + "`\n";
  if (mismatches > 0)
    out += "- warning: in " + std::to_string(mismatches) +
           " case runs the rows computed (per prompt logprobs) differ from the reported counts\n";
  return out;
}

}  // namespace clm
