#include "text/rule_spans.h"

#include <queue>
#include <tuple>

#include "model/utf8.h"

namespace clm {

namespace {

struct Candidate {
  ByteRange bytes;
  std::size_t rule = 0;
};

// Orders the queue so that the best candidate is on top: earliest start,
// then first rule, then longest.
struct WorseCandidate {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return std::tuple(a.bytes.begin, a.rule, b.bytes.end) > std::tuple(b.bytes.begin, b.rule, a.bytes.end);
  }
};

bool long_enough(const SplitRule& rule, ByteRange bytes, const TokenOffsets& tokens) {
  return rule.min_length == 0 || tokens.count(bytes) >= rule.min_length;
}

// Every non-empty match of `rule` in the stretch, left to right, none
// overlapping the one before.
void add_matches(const SplitRule& rule, std::size_t index, std::string_view text, ByteRange stretch,
                 const TokenOffsets& tokens, std::vector<Candidate>& out) {
  const re2::StringPiece input(text.data() + stretch.begin, stretch.size());
  re2::StringPiece match;
  for (std::size_t pos = 0; pos < input.size();) {
    if (!rule.pattern->Match(input, pos, input.size(), re2::RE2::UNANCHORED, &match, 1)) break;
    const auto begin = static_cast<std::size_t>(match.data() - input.data());
    const std::size_t end = begin + match.size();
    if (end == begin) {  // an empty match makes no block; look again one character on
      if (begin >= input.size()) break;
      pos = begin + utf8_decode_at(std::string_view(input.data(), input.size()), begin).len;
      continue;
    }
    const ByteRange bytes{stretch.begin + begin, stretch.begin + end};
    if (long_enough(rule, bytes, tokens)) out.push_back({bytes, index});
    pos = end;
  }
}

}  // namespace

std::vector<TypedSpan> find_rule_spans(std::span<const SplitRule> rules, std::string_view text, ByteRange stretch,
                                       const TokenOffsets& tokens) {
  std::vector<Candidate> found;
  for (std::size_t r = 0; r < rules.size(); ++r) add_matches(rules[r], r, text, stretch, tokens, found);
  std::priority_queue<Candidate, std::vector<Candidate>, WorseCandidate> queue(WorseCandidate{}, std::move(found));

  std::vector<TypedSpan> chosen;
  std::size_t taken_to = stretch.begin;  // end of the last chosen span
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    if (c.bytes.begin >= taken_to) {
      chosen.push_back({c.bytes, rules[c.rule].type});
      taken_to = c.bytes.end;
      continue;
    }
    // Overlapped: what is left after the chosen span competes again.
    c.bytes.begin = taken_to;
    if (c.bytes.begin < c.bytes.end && long_enough(rules[c.rule], c.bytes, tokens)) queue.push(c);
  }
  return chosen;
}

}  // namespace clm
