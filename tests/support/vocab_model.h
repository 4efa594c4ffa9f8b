// A vocabulary-only GGUF built in memory: the file and its tokenizer, for
// tests of what sits on the tokenizer (chat templates and renderers).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/synthetic_vocab.h"
#include "model/tokenizer.h"

namespace clm::test {

struct VocabModel {
  std::vector<std::byte> bytes;  // the parsed file views into these
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

// With a tokenizer.chat_template when `chat_template` is non-empty. Failures
// are test failures, leaving the members empty.
VocabModel make_vocab_model(const SyntheticVocab& vocab, const std::string& chat_template);

}  // namespace clm::test
