#include "dialogue_scaling.h"

#include <cstdio>
#include <filesystem>

#include "model/model.h"
#include "model_bench.h"
#include "util/thread_pool.h"

namespace clm {

Result<DialogueScalingResult> run_dialogue_scaling(const DialogueBenchOptions& o,
                                                   const std::vector<int>& session_counts) {
  if (session_counts.empty()) return fail("bench dialogue --scaling: no session counts");
  for (int n : session_counts)
    if (n < 1) return fail("bench dialogue --scaling: session counts must be positive");
  DialogueScalingResult r;
  r.model = std::filesystem::path(o.engine.load.model_path).filename().string();  // no machine path in reports

  ModelBenchOptions mo;
  mo.model_path = o.engine.load.model_path;
  mo.n_prompt = 32;
  mo.n_gen = 0;
  mo.n_threads = o.engine.load.n_threads;
  mo.repetitions = 3;
  std::fprintf(stderr, "bench dialogue --scaling: the 32-token prefill rate\n");
  auto pp = run_model_bench(mo);
  if (!pp) return std::unexpected(pp.error());
  r.prefill32_tokens_per_s = pp->pp_tokens_per_s.median;

  auto model = Model::load(o.engine.load.model_path);
  if (!model) return fail(model.error().message);
  ThreadPool threads(o.engine.load.n_threads > 0 ? o.engine.load.n_threads : hardware_threads());
  for (int n : session_counts) {
    std::fprintf(stderr, "bench dialogue --scaling: %d sessions sharing a %d-token system prompt\n", n,
                 o.system_tokens);
    DialogueBenchOptions one = o;
    one.sessions = n;
    auto run = run_sessions(**model, threads, one, /*share=*/true);
    if (!run) return std::unexpected(run.error());
    r.rows.push_back({n, *run});
  }
  return r;
}

nlohmann::json to_json(const DialogueBenchOptions& o, const DialogueScalingResult& r) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"sessions", row.sessions},
                    {"generated_tokens", row.run.generated_tokens},
                    {"generated_tokens_per_second", row.run.tokens_per_s},
                    {"over_prefill32", row.run.tokens_per_s / r.prefill32_tokens_per_s},
                    {"prompt_tokens_computed", row.run.prompt_tokens_computed},
                    {"decode_only_tokens_per_second", row.run.decode_only_tokens_per_s},
                    {"decode_only_over_prefill32", row.run.decode_only_tokens_per_s / r.prefill32_tokens_per_s},
                    {"ttft_p50_ms", row.run.ttft_p50_s * 1e3},
                    {"ttft_p95_ms", row.run.ttft_p95_s * 1e3}});
  return {{"model", r.model},
          {"block_size", o.engine.pool.block_size},
          {"system_tokens", o.system_tokens},
          {"turns", o.turns},
          {"user_tokens", o.user_tokens},
          {"reply_tokens", o.reply_tokens},
          {"prefill32_tokens_per_second", r.prefill32_tokens_per_s},
          {"rows", rows}};
}

std::string to_markdown(const DialogueBenchOptions& o, const DialogueScalingResult& r) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "### Sessions sharing a %d-token system prompt, %d turns of %d user and %d generated tokens\n\n"
                "32-token prefill rate (`bench model -p 32`, same run): %.1f tok/s\n\n"
                "| sessions | generated tok/s | / prefill rate | prompt tokens computed | decode-only steps tok/s | "
                "/ prefill rate | TTFT p50 (ms) | TTFT p95 (ms) |\n"
                "|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                o.system_tokens, o.turns, o.user_tokens, o.reply_tokens, r.prefill32_tokens_per_s);
  out += buf;
  for (const auto& row : r.rows) {
    std::snprintf(buf, sizeof buf, "| %d | %.1f | %.3f | %ld | %.1f | %.3f | %.1f | %.1f |\n", row.sessions,
                  row.run.tokens_per_s, row.run.tokens_per_s / r.prefill32_tokens_per_s,
                  row.run.prompt_tokens_computed, row.run.decode_only_tokens_per_s,
                  row.run.decode_only_tokens_per_s / r.prefill32_tokens_per_s, row.run.ttft_p50_s * 1e3,
                  row.run.ttft_p95_s * 1e3);
    out += buf;
  }
  return out;
}

}  // namespace clm
