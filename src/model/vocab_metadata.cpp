#include "model/vocab_metadata.h"

namespace clm {

void add_vocab_metadata(GgufWriter& writer, const VocabMetadata& vocab) {
  auto add_id = [&](const char* key, int32_t id) {
    if (id >= 0) writer.add_u32(key, static_cast<uint32_t>(id));
  };
  writer.add_string("tokenizer.ggml.model", vocab.model);
  if (!vocab.pre.empty()) writer.add_string("tokenizer.ggml.pre", vocab.pre);
  if (!vocab.normalizer.empty()) writer.add_string(kNormalizerKey, vocab.normalizer);
  writer.add_string_array("tokenizer.ggml.tokens", vocab.tokens);
  writer.add_i32_array("tokenizer.ggml.token_type", vocab.types);
  if (!vocab.scores.empty()) writer.add_f32_array("tokenizer.ggml.scores", vocab.scores);
  if (!vocab.merges.empty()) writer.add_string_array("tokenizer.ggml.merges", vocab.merges);
  add_id("tokenizer.ggml.bos_token_id", vocab.bos);
  add_id("tokenizer.ggml.eos_token_id", vocab.eos);
  add_id("tokenizer.ggml.unknown_token_id", vocab.unk);
  if (vocab.add_bos) writer.add_bool("tokenizer.ggml.add_bos_token", *vocab.add_bos);
  if (vocab.add_eos) writer.add_bool("tokenizer.ggml.add_eos_token", *vocab.add_eos);
  add_id("tokenizer.ggml.eot_token_id", vocab.eot);
  add_id("tokenizer.ggml.padding_token_id", vocab.pad);
  if (!vocab.chat_template.empty()) writer.add_string("tokenizer.chat_template", vocab.chat_template);
  if (!vocab.named_chat_templates.empty()) {
    std::vector<std::string> names;
    for (const auto& [name, text] : vocab.named_chat_templates) {
      names.push_back(name);
      writer.add_string("tokenizer.chat_template." + name, text);
    }
    writer.add_string_array("tokenizer.chat_templates", names);
  }
}

}  // namespace clm
