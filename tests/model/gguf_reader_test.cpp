// The reader against the real stories260K model; the expected values were
// read from the file by an independent reader (see models/README.md).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "model/gguf.h"
#include "support/test_paths.h"

namespace clm {
namespace {

class GgufReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = GgufFile::open(test::shared_file("models/stories260K.gguf"));
    ASSERT_TRUE(opened) << opened.error().message;
    file_ = std::move(*opened);
  }
  GgufFile file_;
};

TEST_F(GgufReaderTest, HeaderCountsAndLayout) {
  EXPECT_EQ(file_.version(), 3u);
  EXPECT_EQ(file_.tensors().size(), 48u);
  EXPECT_EQ(file_.metadata().size(), 19u);
  EXPECT_EQ(file_.alignment(), 32u);
  EXPECT_EQ(file_.data_offset(), 14176u);
  EXPECT_EQ(file_.bytes().size(), 1185376u);
  EXPECT_EQ(file_.find("general.alignment"), nullptr);
}

TEST_F(GgufReaderTest, TypedMetadata) {
  EXPECT_EQ(file_.get_uint("llama.block_count").value(), 5u);
  EXPECT_EQ(file_.get_uint("llama.embedding_length").value(), 64u);
  EXPECT_EQ(file_.get_int("llama.attention.head_count_kv").value(), 4);
  EXPECT_EQ(file_.get_uint("tokenizer.ggml.padding_token_id").value(), 4294967295u);
  EXPECT_EQ(file_.get_string("general.architecture").value(), "llama");
  EXPECT_FLOAT_EQ(static_cast<float>(file_.get_float("llama.attention.layer_norm_rms_epsilon").value()), 1e-5f);
  const GgufValue* ctx = file_.find("llama.context_length");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->type, GgufValueType::UINT32);

  // Mismatched types are errors that name the key and both types.
  auto as_string = file_.get_string("llama.block_count");
  ASSERT_FALSE(as_string);
  EXPECT_NE(as_string.error().message.find("llama.block_count"), std::string::npos);
  EXPECT_NE(as_string.error().message.find("uint32"), std::string::npos);
  EXPECT_FALSE(file_.get_float("llama.block_count"));
  EXPECT_FALSE(file_.get_uint("general.name"));
  auto missing = file_.get_uint("llama.rope.freq_base");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
}

TEST_F(GgufReaderTest, TokenizerArrays) {
  auto tokens = file_.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens) << tokens.error().message;
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");

  auto scores = file_.get_float_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->size(), 512u);
  auto types = file_.get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types);
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[0], 2);
  EXPECT_EQ((*types)[1], 3);
  EXPECT_EQ((*types)[3], 6);

  EXPECT_FALSE(file_.get_float_array("tokenizer.ggml.tokens"));
  EXPECT_FALSE(file_.get_string_array("tokenizer.ggml.scores"));
  EXPECT_FALSE(file_.get_string_array("general.name"));
}

TEST_F(GgufReaderTest, TensorInfosPointIntoTheFile) {
  const GgufTensorInfo* k = file_.tensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->dims, (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(k->type, WeightType::F32);
  EXPECT_EQ(k->n_elements, 64u * 32u);
  EXPECT_EQ(k->n_bytes, 64u * 32u * 4u);
  EXPECT_EQ(k->offset, file_.data_offset() + 278784u);
  EXPECT_EQ(k->data, file_.bytes().data() + file_.data_offset() + 278784u);
  float first[2];
  std::memcpy(first, k->data, sizeof first);
  EXPECT_FLOAT_EQ(first[0], 0.2161301076412201f);
  EXPECT_FLOAT_EQ(first[1], 0.18407107889652252f);

  const GgufTensorInfo* out = file_.tensor("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(out->offset, file_.data_offset() + 131328u);
  // The output projection is a byte-equal copy of the embedding.
  const GgufTensorInfo* embd = file_.tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->offset, file_.data_offset());
  EXPECT_EQ(std::memcmp(embd->data, out->data, out->n_bytes), 0);

  EXPECT_EQ(file_.tensor("blk.5.attn_k.weight"), nullptr);

  std::set<std::string> names;
  uint64_t total = 0;
  for (const auto& t : file_.tensors()) {
    names.insert(t.name);
    total += t.n_elements;
    EXPECT_EQ((t.offset - file_.data_offset()) % file_.alignment(), 0u) << t.name;
    EXPECT_LE(t.offset + t.n_bytes, file_.bytes().size()) << t.name;
  }
  EXPECT_EQ(names.size(), 48u);
  // 260,032 parameters with the embedding counted once, plus its 64 x 512 copy.
  EXPECT_EQ(total, 260032u + 64u * 512u);
}

TEST_F(GgufReaderTest, MovedFileKeepsViewsValid) {
  const std::string_view arch = file_.get_string("general.architecture").value();
  GgufFile moved = std::move(file_);
  EXPECT_EQ(moved.get_string("general.architecture").value(), arch);
  EXPECT_EQ(moved.get_string_array("tokenizer.ggml.tokens").value()[1], "<s>");
  EXPECT_FALSE(moved.path().empty());
}

TEST(GgufOpen, MissingFileIsAnError) {
  auto r = GgufFile::open(test::temp_dir() + "/absent.gguf");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("absent.gguf"), std::string::npos);
}

}  // namespace
}  // namespace clm
