#include "support/vocab_model.h"

#include <gtest/gtest.h>

#include "model/gguf_writer.h"

namespace clm::test {

VocabModel make_vocab_model(const SyntheticVocab& vocab, const std::string& chat_template) {
  VocabModel m;
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  add_vocab_metadata(w, vocab);
  if (!chat_template.empty()) w.add_string("tokenizer.chat_template", chat_template);
  m.bytes = w.serialize();
  auto file = GgufFile::parse(m.bytes);
  EXPECT_TRUE(file) << file.error().message;
  if (!file) return m;
  m.file = std::make_unique<GgufFile>(std::move(*file));
  auto tok = Tokenizer::from_gguf(*m.file);
  EXPECT_TRUE(tok) << tok.error().message;
  if (tok) m.tok = std::move(*tok);
  return m;
}

}  // namespace clm::test
