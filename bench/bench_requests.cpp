#include "bench_requests.h"

#include <algorithm>
#include <string>

namespace clm {

GenerateOptions greedy_request(int max_tokens, ReuseMode mode) {
  GenerateOptions g;
  g.max_tokens = max_tokens;
  g.stop_at_end_of_generation = false;
  g.sampler.temperature = 0.0f;
  g.overrides.reuse = mode;
  return g;
}

Result<GenerationStats> generate_counted(Engine& engine, std::span<const int32_t> prompt, const GenerateOptions& g,
                                         std::vector<int32_t>* tokens, std::string_view bench) {
  auto stats = engine.generate(prompt, g, [tokens](const GeneratedToken& t) {
    if (tokens) tokens->push_back(t.id);
    return true;
  });
  const std::string who = "bench " + std::string(bench) + ": ";
  if (!stats) return fail(who + stats.error().message);
  // Every prompt token's K/V came from exactly one place.
  if (stats->reuse.total() != static_cast<int>(prompt.size()))
    return fail(who + "reuse counts add up to " + std::to_string(stats->reuse.total()) + ", not " +
                std::to_string(prompt.size()));
  return stats;
}

int leading_agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<int>(ia - a.begin());
}

}  // namespace clm
