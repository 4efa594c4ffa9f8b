#include "cache/reuse_plan.h"

#include <charconv>

namespace clm {

std::string_view to_string(ReuseMode mode) {
  switch (mode) {
    case ReuseMode::Off: return "off";
    case ReuseMode::Prefix: return "prefix";
    case ReuseMode::Shift: return "shift";
    case ReuseMode::Blend: return "blend";
  }
  return "?";
}

std::optional<ReuseMode> parse_reuse_mode(std::string_view text) {
  for (ReuseMode m : {ReuseMode::Off, ReuseMode::Prefix, ReuseMode::Shift, ReuseMode::Blend})
    if (text == to_string(m)) return m;
  return std::nullopt;
}

std::optional<BlendChoice> parse_blend_ratio(std::string_view text) {
  if (text == "auto") return BlendChoice{BlendChoice{}.ratio, true};
  float r = 0.0f;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), r);
  if (err != std::errc() || end != text.data() + text.size() || !(r >= 0.0f && r <= 1.0f)) return std::nullopt;
  return BlendChoice{r, false};
}

std::string_view to_string(BlockStrategy strategy) {
  switch (strategy) {
    case BlockStrategy::Token: return "token";
    case BlockStrategy::Semantic: return "semantic";
    case BlockStrategy::Session: return "session";
  }
  return "?";
}

std::optional<BlockStrategy> parse_block_strategy(std::string_view text) {
  for (BlockStrategy s : {BlockStrategy::Token, BlockStrategy::Semantic, BlockStrategy::Session})
    if (text == to_string(s)) return s;
  return std::nullopt;
}

ReuseCounts ReusePlan::counts(int prompt_tokens) const {
  ReuseCounts c;
  c.prefix = prefix_tokens;
  for (const ReuseSpan& s : spans) {
    c.recomputed += s.lead;
    c.shift += s.length - s.lead;
  }
  c.computed = prompt_tokens - c.prefix - c.shift - c.recomputed;
  return c;
}

ReusePlan ReusePlan::shared_blocks_only(int prompt_tokens, int block_size) const {
  ReusePlan p;
  p.mode = mode;
  p.prefix_blocks = prefix_blocks;
  p.prefix_keys = prefix_keys;
  p.prefix_generations = prefix_generations;
  p.prefix_tokens = static_cast<int32_t>(prefix_blocks.size()) * block_size;
  if (p.prefix_tokens < prompt_tokens) p.compute.push_back({p.prefix_tokens, prompt_tokens});
  return p;
}

}  // namespace clm
