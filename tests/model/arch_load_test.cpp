// qwen3 and phi3 files: what their layouts bind to, and the malformed
// variants (missing or misshapen per-head norms and fused matrices, LongRoPE
// factors) refused by name at load, before any compute.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "model/gguf_writer.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

SyntheticModelSpec spec_of(const std::string& arch) {
  SyntheticModelSpec s;
  s.arch = arch;
  s.n_vocab = 320;
  s.n_embd = 64;
  s.n_ff = 96;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  return s;
}

// A valid synthetic model of `spec`, copied with the tensors and metadata
// keys named in `drop` left out and whatever `add` writes appended.
std::string edited_model(const SyntheticModelSpec& spec, const std::set<std::string>& drop,
                         const std::function<void(GgufWriter&)>& add) {
  const std::string dir = test::temp_dir();
  const std::string source = dir + "/source.gguf";
  EXPECT_TRUE(write_synthetic_model(spec, source));
  auto file = GgufFile::open(source);
  EXPECT_TRUE(file) << (file ? "" : file.error().message);
  GgufWriter w;
  for (const auto& [key, value] : file->metadata()) {
    if (!drop.contains(std::string(key))) {
      EXPECT_TRUE(w.add_value(std::string(key), value));
    }
  }
  for (const GgufTensorInfo& t : file->tensors())
    if (!drop.contains(t.name)) w.add_tensor(t.name, t.type, t.dims, std::vector<std::byte>(t.data, t.data + t.n_bytes));
  add(w);
  const std::string path = dir + "/edited.gguf";
  EXPECT_TRUE(w.write(path));
  return path;
}

void add_f32_tensor(GgufWriter& w, const std::string& name, std::vector<uint64_t> dims) {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;
  w.add_tensor(name, WeightType::F32, std::move(dims), std::vector<std::byte>(n * sizeof(float)));
}

std::string load_error(const std::string& path) {
  auto m = Model::load(path);
  EXPECT_FALSE(m) << path << " loaded";
  return m ? "" : m.error().message;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ArchLoad, Qwen3BindsPerHeadNormsAndWideHeads) {
  SyntheticModelSpec s = spec_of("qwen3");
  s.head_dim = 32;  // 4 heads of 32 on a 64 embedding, as Qwen3's heads are wider than n_embd / n_heads
  const std::string path = test::temp_dir() + "/qwen3.gguf";
  ASSERT_TRUE(write_synthetic_model(s, path));
  auto m = Model::load(path);
  ASSERT_TRUE(m) << m.error().message;
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch, Arch::Qwen3);
  EXPECT_EQ(c.head_dim, 32);
  EXPECT_EQ(c.n_rot, 32);
  EXPECT_EQ(c.rope_layout, RopeLayout::NeoX);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FALSE(c.fused_qkv);
}

TEST(ArchLoad, Phi3BindsFusedMatricesAndPartialRope) {
  SyntheticModelSpec s = spec_of("phi3");
  s.rope_dims = 12;
  const std::string path = test::temp_dir() + "/phi3.gguf";
  ASSERT_TRUE(write_synthetic_model(s, path));
  auto m = Model::load(path);
  ASSERT_TRUE(m) << m.error().message;
  const ModelConfig& c = (*m)->config();
  EXPECT_EQ(c.arch, Arch::Phi3);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.n_rot, 12);
  EXPECT_EQ(c.rope_layout, RopeLayout::NeoX);
  EXPECT_TRUE(c.fused_qkv);
  EXPECT_TRUE(c.fused_gate_up);
  EXPECT_FALSE(c.qk_norm);
}

TEST(ArchLoad, Qwen3WithoutQNormNamesTheTensor) {
  const std::string err = load_error(edited_model(spec_of("qwen3"), {"blk.1.attn_q_norm.weight"}, [](GgufWriter&) {}));
  EXPECT_TRUE(contains(err, "missing tensor blk.1.attn_q_norm.weight")) << err;
}

TEST(ArchLoad, Qwen3KNormOfEmbeddingSizeIsRefused) {
  // A norm over the whole k vector instead of one head.
  const std::string err = load_error(edited_model(spec_of("qwen3"), {"blk.0.attn_k_norm.weight"}, [](GgufWriter& w) {
    add_f32_tensor(w, "blk.0.attn_k_norm.weight", {32});
  }));
  EXPECT_TRUE(contains(err, "blk.0.attn_k_norm.weight has shape [32], expected [16]")) << err;
}

TEST(ArchLoad, ValueLengthOtherThanKeyLengthIsRefused) {
  SyntheticModelSpec s = spec_of("qwen3");
  s.head_dim = 32;
  const std::string err = load_error(
      edited_model(s, {"qwen3.attention.value_length"}, [](GgufWriter& w) { w.add_u32("qwen3.attention.value_length", 16); }));
  EXPECT_TRUE(contains(err, "value_length 16 differs from key_length 32")) << err;
}

TEST(ArchLoad, Phi3WithSeparateProjectionsNamesTheFusedTensor) {
  // A llama layout labelled phi3: attn_q/k/v instead of attn_qkv.
  const std::string err = load_error(edited_model(spec_of("phi3"), {"blk.0.attn_qkv.weight"}, [](GgufWriter& w) {
    add_f32_tensor(w, "blk.0.attn_q.weight", {64, 64});
    add_f32_tensor(w, "blk.0.attn_k.weight", {64, 32});
    add_f32_tensor(w, "blk.0.attn_v.weight", {64, 32});
  }));
  EXPECT_TRUE(contains(err, "missing tensor blk.0.attn_qkv.weight")) << err;
}

TEST(ArchLoad, Phi3FusedQkvWithoutValueRowsIsRefused) {
  const std::string err = load_error(edited_model(spec_of("phi3"), {"blk.0.attn_qkv.weight"}, [](GgufWriter& w) {
    add_f32_tensor(w, "blk.0.attn_qkv.weight", {64, 64 + 32});
  }));
  EXPECT_TRUE(contains(err, "blk.0.attn_qkv.weight has shape [64, 96], expected [64, 128]")) << err;
}

TEST(ArchLoad, Phi3FfnUpWithoutGateHalfIsRefused) {
  const std::string err = load_error(edited_model(spec_of("phi3"), {"blk.1.ffn_up.weight"}, [](GgufWriter& w) {
    add_f32_tensor(w, "blk.1.ffn_up.weight", {64, 96});
  }));
  EXPECT_TRUE(contains(err, "blk.1.ffn_up.weight has shape [64, 96], expected [64, 192]")) << err;
}

TEST(ArchLoad, Phi3LongRopeFactorsAreRefused) {
  for (const std::string name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    const std::string err = load_error(
        edited_model(spec_of("phi3"), {}, [&](GgufWriter& w) { add_f32_tensor(w, name, {8}); }));
    EXPECT_TRUE(contains(err, name) && contains(err, "LongRoPE") && contains(err, "not supported")) << err;
  }
}

TEST(ArchLoad, RopeWiderThanTheKernelIsRefused) {
  SyntheticModelSpec s = spec_of("qwen3");
  s.n_layers = 1;
  s.n_heads = 2;
  s.n_kv_heads = 1;
  s.head_dim = 1040;
  s.rope_dims = 64;  // make-model itself refuses more than the kernel rotates
  const std::string err = load_error(edited_model(s, {"qwen3.rope.dimension_count"}, [](GgufWriter& w) {
    w.add_u32("qwen3.rope.dimension_count", 1040);
  }));
  EXPECT_TRUE(contains(err, "rope.dimension_count 1040 is more than this engine rotates (1024)")) << err;
}

}  // namespace
}  // namespace clm
