// The results of `clmcache bench restore` as JSON and as a Markdown table.
#include <cstdio>
#include <string>

#include "report_json.h"
#include "restore_bench.h"

namespace clm {

namespace {

nlohmann::json pair_json(const RestorePair& p, double target) {
  return {{"warm_ttft_ms", summary_ms_json(p.warm_ttft_s)},
          {"cold_ttft_ms", summary_ms_json(p.cold_ttft_s)},
          {"ratio", p.ratio()},
          {"target", target},
          {"target_met", p.ratio() <= target},
          {"restored_tokens", p.restored_tokens},
          {"greedy_agree_with_cold", p.agree_with_cold}};
}

std::string row(const char* what, const RestorePair& p, double target, int agree_tokens) {
  char line[512];
  std::snprintf(line, sizeof line, "| %s | %d | %.1f | %.1f | %.3f | <= %.1f: %s | %d/%d |\n", what, p.restored_tokens,
                p.warm_ttft_s.median * 1e3, p.cold_ttft_s.median * 1e3, p.ratio(), target,
                p.ratio() <= target ? "met" : "not met", p.agree_with_cold, agree_tokens);
  return line;
}

}  // namespace

nlohmann::json to_json(const RestoreBenchOptions& o, const RestoreBenchResult& r) {
  return {{"model", r.model},
          {"threads", r.n_threads},
          {"block_size", o.engine.pool.block_size},
          {"prefix_tokens", o.prefix_tokens},
          {"prompt_tokens", r.prompt_tokens},
          {"repetitions", o.repetitions},
          {"disk", pair_json(r.disk, kDiskRestoreTarget)},
          {"redis", r.redis ? pair_json(*r.redis, kRedisShareTarget) : nlohmann::json(nullptr)},
          {"redis_skipped", r.redis_skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.redis_skipped)}};
}

std::string to_markdown(const RestoreBenchOptions& o, const RestoreBenchResult& r) {
  std::string out = "bench restore: " + r.model + ", " + std::to_string(r.n_threads) + " threads, a " +
                    std::to_string(o.prefix_tokens) + "-token prefix then a " + std::to_string(r.prompt_tokens) +
                    "-token request, fresh engines, median of " + std::to_string(o.repetitions) + " alternated runs\n\n";
  out += "| case | tokens restored | TTFT warm (ms) | TTFT cold (ms) | warm / cold | target | greedy tokens equal |\n";
  out += "|---|---|---|---|---|---|---|\n";
  out += row("restart, prefix restored from the disk tier", r.disk, kDiskRestoreTarget, o.agree_tokens);
  if (r.redis) out += row("second process, prefix from Redis", *r.redis, kRedisShareTarget, o.agree_tokens);
  if (!r.redis_skipped.empty()) out += "\nRedis part skipped: " + r.redis_skipped + "\n";
  return out;
}

}  // namespace clm
