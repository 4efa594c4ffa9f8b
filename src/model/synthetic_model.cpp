#include "model/synthetic_model.h"

#include <cmath>
#include <cstring>

#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "model/gguf_writer.h"
#include "model/synthetic_vocab.h"

namespace clm {

namespace {

// splitmix64: tiny, seedable, identical on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float uniform() { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }

 private:
  uint64_t state_;
};

std::vector<std::byte> encode_matrix(WeightType type, const std::vector<float>& values, std::size_t cols) {
  const std::size_t rows = values.size() / cols;
  const std::size_t rb = row_bytes(type, cols);
  std::vector<std::byte> out(rb * rows);
  for (std::size_t r = 0; r < rows; ++r) quantize_row(type, values.data() + r * cols, out.data() + r * rb, cols);
  return out;
}

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

class TensorMaker {
 public:
  TensorMaker(GgufWriter& w, Rng& rng, WeightType type) : w_(w), rng_(rng), type_(type) {}

  // rows x cols matrix, uniform with variance about 1/cols so activations
  // keep their scale through the layers.
  void matrix(const std::string& name, int cols, int rows) {
    std::vector<float> v(static_cast<std::size_t>(cols) * static_cast<std::size_t>(rows));
    const float scale = std::sqrt(3.0f / static_cast<float>(cols));
    for (float& x : v) x = rng_.uniform() * scale;
    w_.add_tensor(name, type_, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)},
                  encode_matrix(type_, v, static_cast<std::size_t>(cols)));
  }
  void vector(const std::string& name, int n, float center, float spread) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = center + rng_.uniform() * spread;
    w_.add_tensor(name, WeightType::F32, {static_cast<uint64_t>(n)}, f32_bytes(v));
  }

 private:
  GgufWriter& w_;
  Rng& rng_;
  WeightType type_;
};

// general.file_type uses llama.cpp's file-type numbering, which differs
// from the tensor type ids; other tools label the model by it.
uint32_t file_type_of(WeightType t) {
  switch (t) {
    case WeightType::F32: return 0;
    case WeightType::F16: return 1;
    case WeightType::Q4_0: return 2;
    case WeightType::Q8_0: return 7;
    case WeightType::Q4_K: return 14;  // "Q4_K_S": every matrix Q4_K
    case WeightType::Q5_K: return 16;  // "Q5_K_S"
    case WeightType::Q6_K: return 18;
    case WeightType::BF16: return 32;
    default: return 0;
  }
}

}  // namespace

std::vector<std::string> synthetic_preset_names() { return {"tiny", "demo", "110m", "1b"}; }

Result<SyntheticModelSpec> synthetic_preset(std::string_view name) {
  SyntheticModelSpec s;
  s.name = "synthetic-" + std::string(name);
  if (name == "tiny") return s;
  if (name == "demo") {
    s.n_vocab = 2048, s.n_embd = 256, s.n_ff = 704, s.n_layers = 4, s.n_heads = 8, s.n_kv_heads = 4;
    return s;
  }
  if (name == "110m") {  // GPT-2-small-like width with a llama block
    s.n_vocab = 32000, s.n_embd = 768, s.n_ff = 2048, s.n_layers = 12, s.n_heads = 12, s.n_kv_heads = 12;
    s.tied_output = true;
    return s;
  }
  if (name == "1b") {  // TinyLlama-1.1B shape
    s.n_vocab = 32000, s.n_embd = 2048, s.n_ff = 5632, s.n_layers = 22, s.n_heads = 32, s.n_kv_heads = 4;
    return s;
  }
  return fail("unknown model preset '" + std::string(name) + "' (known: tiny, demo, 110m, 1b)");
}

int head_dim_of(const SyntheticModelSpec& s) {
  if (s.head_dim != 0) return s.head_dim;
  return s.n_heads > 0 ? s.n_embd / s.n_heads : 0;
}

int rope_dims_of(const SyntheticModelSpec& s) { return s.rope_dims != 0 ? s.rope_dims : head_dim_of(s); }

Status validate(const SyntheticModelSpec& s) {
  if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3" && s.arch != "phi3")
    return fail("make-model: arch must be llama, qwen2, qwen3 or phi3, not '" + s.arch + "'");
  if (s.n_vocab < 300 || s.n_vocab > 1 << 20) return fail("make-model: vocab size must be in 300..1048576");
  if (s.n_embd <= 0 || s.n_ff <= 0 || s.n_layers <= 0 || s.n_heads <= 0 || s.n_kv_heads <= 0 || s.n_ctx <= 0)
    return fail("make-model: every dimension must be positive");
  if (s.head_dim < 0 || s.rope_dims < 0) return fail("make-model: head and rope dimensions must be positive");
  if (s.head_dim == 0 && s.n_embd % s.n_heads != 0)
    return fail("make-model: embedding size must be a multiple of the head count (or give the head dimension)");
  if (s.n_heads % s.n_kv_heads != 0) return fail("make-model: head count must be a multiple of the KV head count");
  const int head_dim = head_dim_of(s);
  if (head_dim % 2 != 0) return fail("make-model: head dimension must be even");
  const int rope_dims = rope_dims_of(s);
  if (rope_dims % 2 != 0 || rope_dims > head_dim || rope_dims > kMaxRopeDims)
    return fail("make-model: rope dimensions must be even and at most the head dimension and " +
                std::to_string(kMaxRopeDims));
  const auto info = weight_type_info(static_cast<uint32_t>(s.weight_type));
  if (!info || !info->supported) return fail("make-model: unsupported weight type");
  const std::size_t blk = info->block_elems;
  if (static_cast<std::size_t>(s.n_embd) % blk != 0 || static_cast<std::size_t>(s.n_ff) % blk != 0)
    return fail("make-model: embedding and feed-forward sizes must be multiples of " + std::to_string(blk) + " for " +
                std::string(info->name));
  if (static_cast<std::size_t>(s.n_heads) * static_cast<std::size_t>(head_dim) % blk != 0)
    return fail("make-model: head count x head dimension must be a multiple of " + std::to_string(blk) + " for " +
                std::string(info->name));
  return {};
}

uint64_t parameter_count(const SyntheticModelSpec& s) {
  const uint64_t e = static_cast<uint64_t>(s.n_embd), f = static_cast<uint64_t>(s.n_ff);
  const uint64_t hd = static_cast<uint64_t>(head_dim_of(s));
  const uint64_t q = hd * static_cast<uint64_t>(s.n_heads);
  const uint64_t kv = hd * static_cast<uint64_t>(s.n_kv_heads);
  const uint64_t biases = s.arch == "qwen2" ? q + 2 * kv : 0;
  const uint64_t qk_norms = s.arch == "qwen3" ? 2 * hd : 0;
  const uint64_t per_layer = e * q * 2 + e * kv * 2 + 3 * e * f + 2 * e + biases + qk_norms;
  const uint64_t vocab = static_cast<uint64_t>(s.n_vocab) * e;
  return per_layer * static_cast<uint64_t>(s.n_layers) + vocab * (s.tied_output ? 1 : 2) + e;
}

std::string_view synthetic_tokenizer_model(std::string_view arch) {
  // qwen models ship byte-level BPE vocabularies, llama and phi3 SentencePiece ones.
  return arch == "qwen2" || arch == "qwen3" ? "gpt2" : "llama";
}

Status write_synthetic_model(const SyntheticModelSpec& s, const std::string& path) {
  if (auto ok = validate(s); !ok) return ok;
  auto vocab = make_synthetic_vocab(std::string(synthetic_tokenizer_model(s.arch)), s.n_vocab);
  if (!vocab) return std::unexpected(vocab.error());
  return write_synthetic_model(s, *vocab, path);
}

Status write_synthetic_model(const SyntheticModelSpec& s, const VocabMetadata& vocab, const std::string& path) {
  if (auto ok = validate(s); !ok) return ok;
  if (vocab.tokens.size() != static_cast<std::size_t>(s.n_vocab)) {
    return fail("make-model: the vocabulary has " + std::to_string(vocab.tokens.size()) +
                " tokens but the model's vocabulary size is " + std::to_string(s.n_vocab));
  }
  GgufWriter w;
  const std::string& a = s.arch;
  const int head_dim = head_dim_of(s);
  const int rope_dims = rope_dims_of(s);
  w.add_string("general.architecture", a);
  w.add_string("general.name", s.name);
  w.add_u32("general.file_type", file_type_of(s.weight_type));
  w.add_u32(a + ".context_length", static_cast<uint32_t>(s.n_ctx));
  w.add_u32(a + ".embedding_length", static_cast<uint32_t>(s.n_embd));
  w.add_u32(a + ".feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.add_u32(a + ".block_count", static_cast<uint32_t>(s.n_layers));
  w.add_u32(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.add_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  if (s.head_dim != 0) {
    w.add_u32(a + ".attention.key_length", static_cast<uint32_t>(head_dim));
    w.add_u32(a + ".attention.value_length", static_cast<uint32_t>(head_dim));
  }
  w.add_u32(a + ".rope.dimension_count", static_cast<uint32_t>(rope_dims));
  w.add_f32(a + ".rope.freq_base", s.rope_freq_base);
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);

  add_vocab_metadata(w, vocab);

  Rng rng(s.seed);
  TensorMaker make(w, rng, s.weight_type);
  const int q_dim = s.n_heads * head_dim;
  const int kv_dim = s.n_kv_heads * head_dim;
  // Embeddings with unit-scale entries: rmsnorm rescales them anyway.
  {
    std::vector<float> v(static_cast<std::size_t>(s.n_vocab) * static_cast<std::size_t>(s.n_embd));
    for (float& x : v) x = rng.uniform();
    w.add_tensor("token_embd.weight", s.weight_type, {static_cast<uint64_t>(s.n_embd), static_cast<uint64_t>(s.n_vocab)},
                 encode_matrix(s.weight_type, v, static_cast<std::size_t>(s.n_embd)));
  }
  make.vector("output_norm.weight", s.n_embd, 1.0f, 0.1f);
  if (!s.tied_output) make.matrix("output.weight", s.n_embd, s.n_vocab);
  if (s.rope_freq_factors) {
    std::vector<float> factors(static_cast<std::size_t>(rope_dims / 2));
    for (std::size_t i = 0; i < factors.size(); ++i)  // low frequencies stretched, as llama-3 does
      factors[i] = 1.0f + 7.0f * static_cast<float>(i) / static_cast<float>(factors.size());
    w.add_tensor("rope_freqs.weight", WeightType::F32, {factors.size()}, f32_bytes(factors));
  }
  for (int i = 0; i < s.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    make.vector(p + "attn_norm.weight", s.n_embd, 1.0f, 0.1f);
    if (a == "phi3") {  // Q, K and V rows in one matrix, in that order
      make.matrix(p + "attn_qkv.weight", s.n_embd, q_dim + 2 * kv_dim);
    } else {
      make.matrix(p + "attn_q.weight", s.n_embd, q_dim);
      make.matrix(p + "attn_k.weight", s.n_embd, kv_dim);
      make.matrix(p + "attn_v.weight", s.n_embd, kv_dim);
    }
    make.matrix(p + "attn_output.weight", q_dim, s.n_embd);
    if (a == "qwen2") {
      make.vector(p + "attn_q.bias", q_dim, 0.0f, 0.5f);
      make.vector(p + "attn_k.bias", kv_dim, 0.0f, 0.5f);
      make.vector(p + "attn_v.bias", kv_dim, 0.0f, 0.5f);
    }
    if (a == "qwen3") {
      make.vector(p + "attn_q_norm.weight", head_dim, 1.0f, 0.5f);
      make.vector(p + "attn_k_norm.weight", head_dim, 1.0f, 0.5f);
    }
    make.vector(p + "ffn_norm.weight", s.n_embd, 1.0f, 0.1f);
    if (a == "phi3") {  // the SwiGLU gate rows, then the up rows
      make.matrix(p + "ffn_up.weight", s.n_embd, 2 * s.n_ff);
    } else {
      make.matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
      make.matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
    }
    make.matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
  }
  return w.write(path);
}

}  // namespace clm
