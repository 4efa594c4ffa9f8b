// PromptTyper: labels a prompt's tokens with the semantic splitter at
// admission, for the cache's type guard and its semantic granularity
// (cache/token_label.h). The tokens are spelled out with special tokens as
// text, so the chat template's turn markup is visible and always cuts.
//
// The intent label is the type of the prompt's last user turn: the last
// block in it that a rule claimed (a question, an instruction, ...), or
// `context` if none did; a prompt with no user turn has none.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "cache/token_label.h"
#include "util/error.h"

namespace clm {

class SemanticSplitter;
class Tokenizer;

class PromptTyper {
 public:
  // The splitter's default rules and options.
  static std::shared_ptr<const PromptTyper> with_default_rules();
  // The rules (and min_block_length) of a JSON rule file
  // (text/split_rules_file.h); errors name the file.
  static Result<std::shared_ptr<const PromptTyper>> from_rules_file(const std::string& path);

  // One label per prompt token, and the intent label. A prompt the splitter
  // refuses (over its input limit) stays untyped: the guard then lets every
  // type through, as for generated tokens.
  PromptLabels label(const Tokenizer& tokenizer, std::span<const int32_t> prompt) const;

  explicit PromptTyper(std::shared_ptr<const SemanticSplitter> splitter);

 private:
  std::shared_ptr<const SemanticSplitter> splitter_;
};

}  // namespace clm
