// The results of `clmcache bench rag` as JSON and as a Markdown table.
#include <cstdio>
#include <string>

#include "report_json.h"
#include "rag_bench.h"

namespace clm {

namespace {

std::string blend_share(const BlendChoice& b) {
  if (b.adaptive) return "auto";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", b.ratio);
  return buf;
}

}  // namespace

nlohmann::json to_json(const RagBenchOptions& o, const RagBenchResult& r) {
  nlohmann::json modes = nlohmann::json::object();
  for (const RagModeRuns& m : r.modes)
    modes[std::string(to_string(m.mode))] = {{"ttft_ms", summary_ms_json(m.ttft_s, m.ttft_p90_s)},
                                             {"over_off", r.ratio_to_off(m.mode)},
                                             {"reuse_total", reuse_counts_json(m.reuse)},
                                             {"blend_probed_total", m.blend_probed},
                                             {"prefill_flops_total", m.prefill_flops},
                                             {"prefill_flops_over_off", r.flops_share(m.mode)},
                                             {"first_token_agree_with_off", m.first_token_agree},
                                             {"greedy_agree_with_off", m.greedy_agree}};
  return {{"model", r.model},
          {"threads", r.n_threads},
          {"block_size", o.engine.pool.block_size},
          {"system_tokens", o.system_tokens},
          {"chunks", o.chunks},
          {"chunk_tokens", o.chunk_tokens},
          {"pool", o.pool},
          {"question_tokens", o.question_tokens},
          {"prompt_tokens", r.prompt_tokens},
          {"warm_tokens", r.warm_tokens},
          {"repetitions", o.repetitions},
          {"reuse_lead", o.reuse_lead},
          {"blend_ratio", blend_share(o.blend)},
          {"agree_tokens", o.agree_tokens},
          {"seed", o.seed},
          {"drawn", r.drawn},
          {"modes", modes},
          {"blend_over_off", r.ratio_to_off(ReuseMode::Blend)}};
}

std::string to_markdown(const RagBenchOptions& o, const RagBenchResult& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "### Time to first token of a RAG prompt: %d-token system prompt, %d of %d precomputed %d-token "
                "chunks, %d-token question (%d tokens; %d requests, lead %d, blend share %s)\n\n",
                o.system_tokens, o.chunks, o.pool, o.chunk_tokens, o.question_tokens, r.prompt_tokens, o.repetitions,
                o.reuse_lead, blend_share(o.blend).c_str());
  std::string out = buf;
  out +=
      "| mode | TTFT p50 (ms) | TTFT p90 (ms) | / off | prefix | shift | recomputed | computed | blend probed | "
      "FLOPs / off | 1st token = off | greedy = off |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const double n = o.repetitions;
  for (const RagModeRuns& m : r.modes) {
    const bool off = m.mode == ReuseMode::Off;
    const std::string first = off ? "—" : std::to_string(m.first_token_agree) + "/" + std::to_string(o.repetitions);
    const std::string greedy =
        off ? "—" : std::to_string(m.greedy_agree) + "/" + std::to_string(o.repetitions * o.agree_tokens);
    std::snprintf(buf, sizeof buf, "| %s | %.1f | %.1f | %.3f | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %s | %s |\n",
                  std::string(to_string(m.mode)).c_str(), m.ttft_s.median * 1e3, m.ttft_p90_s * 1e3,
                  r.ratio_to_off(m.mode), m.reuse.prefix / n, m.reuse.shift / n, m.reuse.recomputed / n,
                  m.reuse.computed / n, static_cast<double>(m.blend_probed) / n, r.flops_share(m.mode), first.c_str(),
                  greedy.c_str());
    out += buf;
  }
  out +=
      "\nToken counts and probes are per request (means). \"1st token = off\": requests whose first greedy token "
      "equals mode off's; \"greedy = off\": leading greedy tokens equal to mode off's, summed over the requests.\n\n";
  std::snprintf(buf, sizeof buf, "**blend / off = %.3f (target ≤ 0.35), shift / off = %.3f, prefix / off = %.3f**\n",
                r.ratio_to_off(ReuseMode::Blend), r.ratio_to_off(ReuseMode::Shift), r.ratio_to_off(ReuseMode::Prefix));
  out += buf;
  return out;
}

}  // namespace clm
