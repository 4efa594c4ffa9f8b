#include "engine/prompt_typer.h"

#include <cctype>

#include <re2/re2.h>

#include "model/tokenizer.h"
#include "text/semantic_splitter.h"
#include "text/split_rules_file.h"
#include "text/token_alignment.h"

namespace clm {

namespace {

// The role a run of turn markup opens: the last role marker in it. Markup
// runs merge the end of one turn with the header of the next
// ("<|im_end|>\n<|im_start|>user\n"), so the last marker is the one that
// counts. Llama-2 puts the user's text after "[INST]" or after "<</SYS>>".
bool opens_user_turn(std::string_view markup) {
  static const re2::RE2 role(R"((?i)(\[/INST\]|\[INST\]|<</SYS>>|<<SYS>>|user|assistant|system|model|tool))");
  re2::StringPiece input(markup.data(), markup.size());
  std::string marker, last;
  while (re2::RE2::FindAndConsume(&input, role, &marker)) last = marker;
  for (char& c : last) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return last == "user" || last == "[inst]" || last == "<</sys>>";
}

uint8_t code(BlockType type) { return static_cast<uint8_t>(type); }

bool only_whitespace(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// The first token of `block` after which it holds nothing but whitespace
// (its last token if it is all whitespace).
std::size_t content_end(const SemanticBlock& block, const SpelledTokens& spelled) {
  std::size_t last = block.tokens.end - 1;
  while (last > block.tokens.begin) {
    const std::size_t from = spelled.offsets.start(last), to = spelled.offsets.start(last + 1);
    if (!only_whitespace(std::string_view(spelled.text).substr(from, to - from))) break;
    --last;
  }
  return last;
}

}  // namespace

PromptTyper::PromptTyper(std::shared_ptr<const SemanticSplitter> splitter) : splitter_(std::move(splitter)) {}

std::shared_ptr<const PromptTyper> PromptTyper::with_default_rules() {
  return std::make_shared<const PromptTyper>(
      std::make_shared<const SemanticSplitter>(SemanticSplitter::with_default_rules()));
}

Result<std::shared_ptr<const PromptTyper>> PromptTyper::from_rules_file(const std::string& path) {
  auto splitter = load_split_rules(path);
  if (!splitter) return std::unexpected(splitter.error());
  return std::make_shared<const PromptTyper>(std::make_shared<const SemanticSplitter>(std::move(*splitter)));
}

PromptLabels PromptTyper::label(const Tokenizer& tokenizer, std::span<const int32_t> prompt) const {
  PromptLabels out;
  const SpelledTokens spelled = spell_tokens(tokenizer, prompt);
  const auto blocks = splitter_->split(spelled.text, spelled.offsets);
  if (!blocks) return out;
  out.tokens.resize(prompt.size());
  bool in_user_turn = false;
  for (const SemanticBlock& b : *blocks) {
    const std::size_t end = content_end(b, spelled);
    for (std::size_t t = b.tokens.begin; t < b.tokens.end; ++t)
      out.tokens[t] = TokenLabel{code(b.type), t == b.tokens.begin, t >= end, b.reusable};
    if (b.type == BlockType::Turn) {
      in_user_turn = opens_user_turn(std::string_view(spelled.text).substr(b.bytes.begin, b.bytes.size()));
      if (in_user_turn) out.intent = code(BlockType::Context);  // until a rule claims a block of this turn
      continue;
    }
    if (in_user_turn && b.type != BlockType::Context) out.intent = code(b.type);
  }
  return out;
}

}  // namespace clm
