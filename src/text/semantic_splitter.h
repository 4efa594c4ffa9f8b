// SemanticSplitter: cuts a prompt into typed blocks (question, step,
// section, turn, document, ...) so that cached K/V is reused only for a span
// of the same type, and at whole-block granularity.
//
// Promises: the blocks cover the whole input in order, in bytes and in
// tokens; chat-template turn markup (and any turn boundary the caller names)
// always cuts; a block cut inside a token starts at that token's start (the
// token belongs to the block holding its last byte); blocks shorter than
// min_block_length tokens are reported but not reusable. Matching is RE2, so
// the time is linear in the input for any rule set, and the input is bounded.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "text/block_type.h"
#include "text/split_rule.h"
#include "text/token_offsets.h"
#include "util/error.h"

namespace clm {

struct SemanticBlock {
  BlockType type = BlockType::Context;
  ByteRange bytes;    // snapped to token starts, so exactly the bytes of `tokens`
  TokenRange tokens;
  // At least min_block_length tokens: worth storing as a reusable snippet.
  // Shorter blocks keep their type but are not stored (finding and repairing
  // a tiny snippet costs more than computing it).
  bool reusable = false;
};

struct SplitterOptions {
  std::size_t min_block_length = 8;       // tokens
  std::size_t max_input_bytes = 8 << 20;  // longer inputs are refused
  bool detect_turn_markup = true;         // cut at chat-template markers found in the text
};

class SemanticSplitter {
 public:
  static constexpr std::size_t kMaxRules = 256;

  explicit SemanticSplitter(SplitterOptions options = {}) : options_(options) {}
  // A splitter with the rules of default_split_rules.h.
  static SemanticSplitter with_default_rules(SplitterOptions options = {});

  // Rules apply in the order added: on matches starting at the same byte,
  // the earlier rule wins (see rule_spans.h for the whole precedence).
  Status add_rule(std::string_view pattern, BlockType type, std::size_t min_length = 0);
  Status add_rule(SplitRule rule);

  const std::vector<SplitRule>& rules() const { return rules_; }
  const SplitterOptions& options() const { return options_; }

  // Splits `text`, whose tokens lie at `tokens` (token_alignment.h, or
  // TokenOffsets::per_character without a tokenizer). `turn_starts` are
  // token positions where a turn starts; each cuts like turn markup does,
  // the block after it starting exactly at that token. Text between turns
  // is typed by the rules; what no rule claims is `context`, one block per
  // blank-line separated paragraph; whitespace between blocks goes to the
  // block before it. Fails on an input over max_input_bytes, offsets that
  // describe another text, or a turn start past the last token.
  Result<std::vector<SemanticBlock>> split(std::string_view text, const TokenOffsets& tokens,
                                           std::span<const std::size_t> turn_starts = {}) const;

 private:
  SplitterOptions options_;
  std::vector<SplitRule> rules_;
};

}  // namespace clm
