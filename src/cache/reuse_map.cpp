#include "cache/reuse_map.h"

#include <algorithm>

namespace clm {

namespace {

// One entry per token: the source in the low bits, bit 7 for evicted.
constexpr uint8_t kEvictedBit = 0x80;

std::vector<uint8_t> expand(const ReuseMap& map) {
  std::vector<uint8_t> out(static_cast<std::size_t>(mapped_tokens(map)));
  for (const SourceRun& r : map)
    std::fill_n(out.begin() + r.begin, r.length,
                static_cast<uint8_t>(static_cast<uint8_t>(r.source) | (r.evicted ? kEvictedBit : 0)));
  return out;
}

ReuseMap compress(const std::vector<uint8_t>& tokens) {
  ReuseMap out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto source = static_cast<TokenSource>(tokens[i] & ~kEvictedBit);
    const bool evicted = (tokens[i] & kEvictedBit) != 0;
    if (!out.empty() && out.back().source == source && out.back().evicted == evicted) {
      ++out.back().length;
    } else {
      out.push_back({source, evicted, static_cast<int32_t>(i), 1});
    }
  }
  return out;
}

void append(ReuseMap& map, TokenSource source, int32_t begin, int32_t end) {
  if (end <= begin) return;
  if (!map.empty() && map.back().source == source && !map.back().evicted) {
    map.back().length += end - begin;
    return;
  }
  map.push_back({source, false, begin, end - begin});
}

}  // namespace

std::string_view to_string(TokenSource source) {
  switch (source) {
    case TokenSource::Prefix: return "prefix";
    case TokenSource::Shift: return "shift";
    case TokenSource::Recomputed: return "recomputed";
    case TokenSource::Computed: return "computed";
  }
  return "computed";
}

ReuseMap reuse_map_of(const ReusePlan& plan, int prompt_tokens) {
  ReuseMap map;
  append(map, TokenSource::Prefix, 0, std::min(plan.prefix_tokens, prompt_tokens));
  int32_t at = plan.prefix_tokens;
  for (const ReuseSpan& s : plan.spans) {
    append(map, TokenSource::Computed, at, s.dst_begin);
    append(map, TokenSource::Recomputed, s.dst_begin, s.dst_begin + s.lead);
    append(map, TokenSource::Shift, s.dst_begin + s.lead, s.dst_begin + s.length);
    at = s.dst_begin + s.length;
  }
  append(map, TokenSource::Computed, at, prompt_tokens);
  return map;
}

void set_source(ReuseMap& map, std::span<const int32_t> positions, TokenSource source) {
  if (positions.empty()) return;
  std::vector<uint8_t> tokens = expand(map);
  for (int32_t p : positions)
    if (p >= 0 && static_cast<std::size_t>(p) < tokens.size())
      tokens[static_cast<std::size_t>(p)] =
          static_cast<uint8_t>((tokens[static_cast<std::size_t>(p)] & kEvictedBit) | static_cast<uint8_t>(source));
  map = compress(tokens);
}

void mark_evicted(ReuseMap& map, std::span<const PromptRange> ranges) {
  if (ranges.empty()) return;
  std::vector<uint8_t> tokens = expand(map);
  const auto size = static_cast<int32_t>(tokens.size());
  for (const PromptRange& r : ranges)
    for (int32_t p = std::max(r.begin, 0); p < std::min(r.end, size); ++p) tokens[static_cast<std::size_t>(p)] |= kEvictedBit;
  map = compress(tokens);
}

ReuseCounts count_sources(const ReuseMap& map) {
  ReuseCounts c;
  for (const SourceRun& r : map) {
    switch (r.source) {
      case TokenSource::Prefix: c.prefix += r.length; break;
      case TokenSource::Shift: c.shift += r.length; break;
      case TokenSource::Recomputed: c.recomputed += r.length; break;
      case TokenSource::Computed: c.computed += r.length; break;
    }
  }
  return c;
}

int32_t mapped_tokens(const ReuseMap& map) { return map.empty() ? 0 : map.back().begin + map.back().length; }

}  // namespace clm
