#include "text/semantic_splitter.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include <re2/re2.h>

#include "text/default_split_rules.h"
#include "text/rule_spans.h"
#include "text/turn_markup.h"
#include "util/check.h"

namespace clm {

namespace {

std::size_t leading_whitespace(std::string_view s) {
  const std::size_t n = s.find_first_not_of(" \t\r\n\f\v");
  return n == std::string_view::npos ? s.size() : n;
}

// A run of blank lines: where one paragraph ends and the next begins.
const re2::RE2& blank_lines() {
  static const re2::RE2 re(R"(\n[ \t\r]*\n(?:[ \t\r]*\n)*)");
  return re;
}

// What no rule claimed: one context piece per paragraph, each keeping the
// blank lines after it.
void add_paragraphs(std::string_view text, ByteRange gap, std::vector<TypedSpan>& out) {
  const re2::StringPiece input(text.data() + gap.begin, gap.size());
  re2::StringPiece blank;
  std::size_t from = 0;
  while (from < input.size() && blank_lines().Match(input, from, input.size(), re2::RE2::UNANCHORED, &blank, 1)) {
    const auto cut = static_cast<std::size_t>(blank.data() - input.data()) + blank.size();
    out.push_back({{gap.begin + from, gap.begin + cut}, BlockType::Context});
    from = cut;
  }
  if (from < input.size()) out.push_back({{gap.begin + from, gap.end}, BlockType::Context});
}

// Types the text between two turn boundaries: the rules' spans and context
// paragraphs between them. Whitespace between two pieces goes to the piece
// before it, so that a block starts with its first word; whitespace-only
// context at the start of the stretch goes to the piece after it.
void type_stretch(std::span<const SplitRule> rules, std::string_view text, ByteRange stretch,
                  const TokenOffsets& tokens, std::vector<TypedSpan>& out) {
  std::vector<TypedSpan> pieces;
  std::size_t pos = stretch.begin;
  for (const TypedSpan& span : find_rule_spans(rules, text, stretch, tokens)) {
    if (span.bytes.begin > pos) add_paragraphs(text, {pos, span.bytes.begin}, pieces);
    pieces.push_back(span);
    pos = span.bytes.end;
  }
  if (pos < stretch.end) add_paragraphs(text, {pos, stretch.end}, pieces);

  const std::size_t first = out.size();
  std::optional<std::size_t> leading_blank;  // where a blank start of the stretch begins
  for (TypedSpan piece : pieces) {
    const std::size_t lead = leading_whitespace(text.substr(piece.bytes.begin, piece.bytes.size()));
    if (lead == piece.bytes.size() && piece.type == BlockType::Context) {
      if (out.size() > first)
        out.back().bytes.end = piece.bytes.end;
      else if (!leading_blank)
        leading_blank = piece.bytes.begin;
      continue;
    }
    if (out.size() > first && lead < piece.bytes.size()) {
      piece.bytes.begin += lead;
      out.back().bytes.end = piece.bytes.begin;
    }
    if (leading_blank) piece.bytes.begin = *std::exchange(leading_blank, std::nullopt);
    out.push_back(piece);
  }
  if (leading_blank) out.push_back({{*leading_blank, stretch.end}, BlockType::Context});  // nothing but blanks
}

}  // namespace

SemanticSplitter SemanticSplitter::with_default_rules(SplitterOptions options) {
  SemanticSplitter splitter(options);
  for (const DefaultSplitRule& rule : default_split_rules()) {
    const Status added = splitter.add_rule(rule.pattern, rule.type, rule.min_length);
    CLM_CHECK(added.has_value(), "a default split rule does not compile");
  }
  return splitter;
}

Status SemanticSplitter::add_rule(std::string_view pattern, BlockType type, std::size_t min_length) {
  auto rule = compile_split_rule(pattern, type, min_length);
  if (!rule) return std::unexpected(rule.error());
  return add_rule(std::move(*rule));
}

Status SemanticSplitter::add_rule(SplitRule rule) {
  if (rule.pattern == nullptr || !rule.pattern->ok()) return fail("a rule needs a compiled pattern");
  if (rules_.size() >= kMaxRules) return fail("at most " + std::to_string(kMaxRules) + " split rules are allowed");
  rules_.push_back(std::move(rule));
  return {};
}

Result<std::vector<SemanticBlock>> SemanticSplitter::split(std::string_view text, const TokenOffsets& tokens,
                                                           std::span<const std::size_t> turn_starts) const {
  if (text.size() > options_.max_input_bytes)
    return fail("the text has " + std::to_string(text.size()) + " bytes; the splitter takes at most " +
                std::to_string(options_.max_input_bytes));
  if (tokens.text_size() != text.size())
    return fail("the token offsets describe a text of " + std::to_string(tokens.text_size()) + " bytes, not " +
                std::to_string(text.size()));

  // Every place the input must be cut: its ends, turn markup, turn starts.
  const std::vector<ByteRange> markup =
      options_.detect_turn_markup ? find_turn_markup(text) : std::vector<ByteRange>{};
  std::vector<std::pair<std::size_t, std::size_t>> cut_tokens;  // (byte, token), a named turn start
  for (std::size_t t : turn_starts) {
    if (t > tokens.size())
      return fail("turn start at token " + std::to_string(t) + " is past the " + std::to_string(tokens.size()) +
                  " tokens");
    cut_tokens.emplace_back(tokens.start(t), t);
  }
  std::sort(cut_tokens.begin(), cut_tokens.end());
  std::vector<std::size_t> edges = {0, text.size()};
  for (const ByteRange& m : markup) edges.insert(edges.end(), {m.begin, m.end});
  for (const auto& cut : cut_tokens) edges.push_back(cut.first);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());

  std::vector<TypedSpan> pieces;
  std::size_t m = 0;
  for (std::size_t e = 0; e + 1 < edges.size(); ++e) {
    const ByteRange stretch{edges[e], edges[e + 1]};
    while (m < markup.size() && markup[m].end <= stretch.begin) ++m;
    if (m < markup.size() && markup[m].begin <= stretch.begin)
      pieces.push_back({stretch, BlockType::Turn});
    else
      type_stretch(rules_, text, stretch, tokens, pieces);
  }
  if (pieces.empty() && tokens.size() > 0) pieces.push_back({{0, 0}, BlockType::Context});  // tokens, no text

  // Snap each piece's start to a token: a named turn start is exact;
  // otherwise the token holding the first byte.
  auto first_token = [&](std::size_t i) -> std::size_t {
    if (i == 0) return 0;
    const std::size_t byte = pieces[i].bytes.begin;
    const auto cut = std::lower_bound(cut_tokens.begin(), cut_tokens.end(), std::pair<std::size_t, std::size_t>{byte, 0});
    if (cut != cut_tokens.end() && cut->first == byte) return cut->second;
    return tokens.token_at(byte);
  };
  std::vector<SemanticBlock> blocks;
  std::size_t begin = first_token(0);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const std::size_t end = i + 1 < pieces.size() ? first_token(i + 1) : tokens.size();
    if (end <= begin) continue;  // inside one token: the block after it takes that token
    blocks.push_back({pieces[i].type, {tokens.start(begin), tokens.start(end)}, {begin, end},
                      end - begin >= options_.min_block_length});
    begin = end;
  }
  return blocks;
}

}  // namespace clm
