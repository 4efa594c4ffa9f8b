// `bench longchat`'s report: JSON and a Markdown table.
#include <cstdio>
#include <string>

#include "longchat_bench.h"

namespace clm {

namespace {

double mib(std::size_t blocks, std::size_t block_bytes) {
  return static_cast<double>(blocks * block_bytes) / (1 << 20);
}

double ratio(double a, double b) { return b > 0.0 ? a / b : 0.0; }

// The share of each conversation the budget keeps at its end, which is the
// budget share `eval evict` measures quality at.
double budget_share(const LongchatBenchResult& r, const LongchatBenchOptions& o) {
  return static_cast<double>(o.kv_budget_tokens) / static_cast<double>(r.target_tokens);
}

// The command that measures the quality of this policy at this budget share
// (docs/QUALITY.md has the figures on the real model).
std::string quality_command(const LongchatBenchOptions& o, const LongchatBenchResult& r) {
  char share[32];
  std::snprintf(share, sizeof share, "%.2f", budget_share(r, o));
  return "clmcache eval evict -m MODEL --cases eval/cases/long_recall.json --prompt-tokens 500 "
         "--continuation-tokens 12 --policies " +
         std::string(evict_kind_name(o.evict.kind)) + " --budgets " + share;
}

nlohmann::json run_json(const SessionRun& s, std::size_t block_bytes, int reached) {
  nlohmann::json j = session_run_json(s, block_bytes);
  j["evicted_tokens"] = s.evicted_tokens;
  j["pool_blocks"] = s.pool_blocks;
  j["conversations_reaching_target"] = reached;
  return j;
}

}  // namespace

nlohmann::json to_json(const LongchatBenchOptions& o, const LongchatBenchResult& r) {
  const SessionRun& b = r.bounded;
  const SessionRun& u = r.unbounded;
  return {{"model", r.model},
          {"block_size", o.engine.pool.block_size},
          {"sessions", o.sessions},
          {"turns", o.turns},
          {"system_tokens", o.system_tokens},
          {"user_tokens", r.user_tokens},
          {"reply_tokens", o.reply_tokens},
          {"kv_budget_tokens", o.kv_budget_tokens},
          {"target_tokens", r.target_tokens},
          {"evict", evict_kind_name(o.evict.kind)},
          {"bound_kv_blocks", r.bound_blocks},
          {"bound_kv_mib", mib(r.bound_blocks, r.block_bytes)},
          {"within_bound", r.within_bound()},
          {"bounded", run_json(b, r.block_bytes, r.bounded_reached)},
          {"unbounded", run_json(u, r.block_bytes, r.unbounded_reached)},
          {"memory_bounded_over_unbounded",
           ratio(static_cast<double>(b.peak_blocks), static_cast<double>(u.peak_blocks))},
          {"throughput_bounded_over_unbounded", ratio(b.tokens_per_s, u.tokens_per_s)},
          {"ttft_p50_bounded_over_unbounded", ratio(b.ttft_p50_s, u.ttft_p50_s)},
          {"ttft_p95_bounded_over_unbounded", ratio(b.ttft_p95_s, u.ttft_p95_s)},
          {"quality", {{"budget_share", budget_share(r, o)}, {"eval_command", quality_command(o, r)}}}};
}

std::string to_markdown(const LongchatBenchOptions& o, const LongchatBenchResult& r) {
  const SessionRun& b = r.bounded;
  const SessionRun& u = r.unbounded;
  char buf[4096];
  std::snprintf(
      buf, sizeof buf,
      "### %d conversations growing to %d tokens (%d x a %d-token KV budget, `%s`): %d turns of %d user + %d "
      "generated tokens over a %d-token system prompt\n\n"
      "| run | generated tok/s | TTFT p50 (ms) | TTFT p95 (ms) | peak KV blocks | peak KV MiB | evicted tokens | "
      "reached the target |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n"
      "| bounded | %.1f | %.1f | %.1f | %zu | %.1f | %ld | %d / %d |\n"
      "| unbounded | %.1f | %.1f | %.1f | %zu | %.1f | %ld | %d / %d |\n\n"
      "Bound (sum of budgets + shared prompt + one block per sequence): %zu blocks, %.1f MiB: peak %s.\n\n"
      "**bounded / unbounded: KV memory %.3f, throughput %.3f, TTFT p50 %.3f, TTFT p95 %.3f**\n\n"
      "Quality at this budget share (%.0f%% of each conversation kept at its end): `%s` (docs/QUALITY.md).\n",
      o.sessions, r.target_tokens, o.growth, o.kv_budget_tokens, std::string(evict_kind_name(o.evict.kind)).c_str(),
      o.turns, r.user_tokens, o.reply_tokens, o.system_tokens, b.tokens_per_s, b.ttft_p50_s * 1e3,
      b.ttft_p95_s * 1e3, b.peak_blocks, mib(b.peak_blocks, r.block_bytes), b.evicted_tokens, r.bounded_reached,
      o.sessions, u.tokens_per_s, u.ttft_p50_s * 1e3, u.ttft_p95_s * 1e3, u.peak_blocks,
      mib(u.peak_blocks, r.block_bytes), u.evicted_tokens, r.unbounded_reached, o.sessions, r.bound_blocks,
      mib(r.bound_blocks, r.block_bytes), r.within_bound() ? "within it" : "OVER it",
      ratio(static_cast<double>(b.peak_blocks), static_cast<double>(u.peak_blocks)),
      ratio(b.tokens_per_s, u.tokens_per_s), ratio(b.ttft_p50_s, u.ttft_p50_s), ratio(b.ttft_p95_s, u.ttft_p95_s),
      100.0 * budget_share(r, o), quality_command(o, r).c_str());
  return buf;
}

}  // namespace clm
