// Loading refuses what the engine cannot run, by name, before any compute.
#include <gtest/gtest.h>

#include <string>

#include "model/gguf_writer.h"
#include "model/model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

void add_llama_header(GgufWriter& w, const std::string& arch) {
  w.add_string("general.architecture", arch);
  w.add_u32(arch + ".embedding_length", 256);
  w.add_u32(arch + ".block_count", 1);
  w.add_u32(arch + ".feed_forward_length", 256);
  w.add_u32(arch + ".attention.head_count", 4);
}

std::string load_error(GgufWriter& w) {
  const std::string path = test::temp_dir() + "/m.gguf";
  EXPECT_TRUE(w.write(path));
  auto m = Model::load(path);
  EXPECT_FALSE(m);
  return m ? "" : m.error().message;
}

TEST(ModelLoad, UnsupportedArchitectureIsRefusedByName) {
  GgufWriter w;
  add_llama_header(w, "gpt2");
  const std::string err = load_error(w);
  EXPECT_NE(err.find("unsupported architecture 'gpt2'"), std::string::npos) << err;
}

TEST(ModelLoad, UnsupportedTensorTypeIsRefusedByName) {
  GgufWriter w;
  add_llama_header(w, "llama");
  const std::size_t vocab = 8;
  w.add_tensor("token_embd.weight", WeightType::Q3_K, {256, vocab}, std::vector<std::byte>(110 * vocab));
  const std::string err = load_error(w);
  EXPECT_NE(err.find("token_embd.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("Q3_K"), std::string::npos) << err;
}

TEST(ModelLoad, InconsistentHyperparametersAreRefused) {
  GgufWriter w;
  add_llama_header(w, "llama");
  w.add_u32("llama.attention.head_count_kv", 3);  // 4 heads are not a multiple of 3
  const std::string err = load_error(w);
  EXPECT_NE(err.find("head_count_kv"), std::string::npos) << err;
}

TEST(ModelLoad, MissingTensorIsNamed) {
  GgufWriter w;
  add_llama_header(w, "llama");
  std::vector<std::byte> embd(256 * 8 * 4);
  w.add_tensor("token_embd.weight", WeightType::F32, {256, 8}, embd);
  const std::string err = load_error(w);
  EXPECT_NE(err.find("output_norm.weight"), std::string::npos) << err;
}

TEST(ModelLoad, RealModelConfigMatchesItsReadme) {
  auto m = Model::load(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(m) << m.error().message;
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch, Arch::Llama);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_ff, 172);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.n_vocab, 512);
  EXPECT_FALSE(c.tied_output);
  EXPECT_FLOAT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_EQ(c.rope_layout, RopeLayout::Adjacent);
}

}  // namespace
}  // namespace clm
