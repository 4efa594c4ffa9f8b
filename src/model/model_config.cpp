#include "model/model_config.h"

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/ops.h"

namespace clm {

namespace {

// Hyperparameters are bounded far above any real model so that a hostile
// file cannot make us size buffers by absurd numbers.
constexpr uint64_t kMaxDim = 1u << 20;
constexpr uint64_t kMaxLayers = 1024;
constexpr uint64_t kMaxVocab = 1u << 22;

Result<int> read_dim(const GgufFile& f, const std::string& key, uint64_t max) {
  auto v = f.get_uint(key);
  if (!v) return fail(v.error().message);
  if (*v == 0 || *v > max)
    return fail("model: " + key + " = " + std::to_string(*v) + " is out of range (1.." + std::to_string(max) + ")");
  return static_cast<int>(*v);
}

Result<int> read_dim_or(const GgufFile& f, const std::string& key, uint64_t max, int fallback) {
  if (f.find(key) == nullptr) return fallback;
  return read_dim(f, key, max);
}

// What each architecture changes in the llama block (llama.cpp's graphs for
// these names are the reference).
Status apply_architecture(ModelConfig& c) {
  if (c.arch_name == "llama") {
    c.arch = Arch::Llama;
    c.rope_layout = RopeLayout::Adjacent;
  } else if (c.arch_name == "qwen2") {
    c.arch = Arch::Qwen2;
    c.rope_layout = RopeLayout::NeoX;
    c.qkv_bias = true;
  } else if (c.arch_name == "qwen3") {
    c.arch = Arch::Qwen3;
    c.rope_layout = RopeLayout::NeoX;
    c.qk_norm = true;
  } else if (c.arch_name == "phi3") {
    c.arch = Arch::Phi3;
    c.rope_layout = RopeLayout::NeoX;
    c.fused_qkv = true;
    c.fused_gate_up = true;
  } else {
    return fail("model: unsupported architecture '" + c.arch_name + "' (supported: llama, qwen2, qwen3, phi3)");
  }
  return {};
}

}  // namespace

Result<ModelConfig> read_model_config(const GgufFile& f) {
  ModelConfig c;
  auto arch = f.get_string("general.architecture");
  if (!arch) return fail("model: missing general.architecture");
  c.arch_name = std::string(*arch);
  if (auto s = apply_architecture(c); !s) return std::unexpected(s.error());
  if (auto name = f.get_string("general.name")) c.name = std::string(*name);

  const std::string p = c.arch_name + ".";
  auto assign = [](int& dst, Result<int> r) -> Status {
    if (!r) return std::unexpected(r.error());
    dst = *r;
    return {};
  };
  if (auto s = assign(c.n_embd, read_dim(f, p + "embedding_length", kMaxDim)); !s) return std::unexpected(s.error());
  if (auto s = assign(c.n_layers, read_dim(f, p + "block_count", kMaxLayers)); !s) return std::unexpected(s.error());
  if (auto s = assign(c.n_ff, read_dim(f, p + "feed_forward_length", kMaxDim)); !s) return std::unexpected(s.error());
  if (auto s = assign(c.n_heads, read_dim(f, p + "attention.head_count", kMaxDim)); !s) return std::unexpected(s.error());
  if (auto s = assign(c.n_kv_heads, read_dim_or(f, p + "attention.head_count_kv", kMaxDim, c.n_heads)); !s)
    return std::unexpected(s.error());
  if (auto s = assign(c.n_ctx_train, read_dim_or(f, p + "context_length", 1u << 24, 2048)); !s)
    return std::unexpected(s.error());
  // The head size is embedding_length / head_count unless key_length says
  // otherwise (qwen3: 16 heads of 128 on a 1024 embedding).
  if (f.find(p + "attention.key_length") == nullptr && c.n_embd % c.n_heads != 0)
    return fail("model: embedding_length " + std::to_string(c.n_embd) + " is not a multiple of head_count " +
                std::to_string(c.n_heads));
  if (auto s = assign(c.head_dim, read_dim_or(f, p + "attention.key_length", kMaxDim, c.n_embd / c.n_heads)); !s)
    return std::unexpected(s.error());
  if (static_cast<uint64_t>(c.n_heads) * static_cast<uint64_t>(c.head_dim) > kMaxDim)
    return fail("model: head_count x key_length is out of range (at most " + std::to_string(kMaxDim) + ")");
  int value_dim = 0;
  if (auto s = assign(value_dim, read_dim_or(f, p + "attention.value_length", kMaxDim, c.head_dim)); !s)
    return std::unexpected(s.error());
  if (value_dim != c.head_dim)
    return fail("model: attention.value_length " + std::to_string(value_dim) + " differs from key_length " +
                std::to_string(c.head_dim) + " (unsupported)");
  if (c.n_heads % c.n_kv_heads != 0)
    return fail("model: head_count " + std::to_string(c.n_heads) + " is not a multiple of head_count_kv " +
                std::to_string(c.n_kv_heads));
  if (auto s = assign(c.n_rot, read_dim_or(f, p + "rope.dimension_count", kMaxDim, c.head_dim)); !s)
    return std::unexpected(s.error());
  if (c.n_rot > c.head_dim || c.n_rot % 2 != 0)
    return fail("model: rope.dimension_count " + std::to_string(c.n_rot) + " must be even and <= head dim " +
                std::to_string(c.head_dim));
  if (c.n_rot > kMaxRopeDims)
    return fail("model: rope.dimension_count " + std::to_string(c.n_rot) + " is more than this engine rotates (" +
                std::to_string(kMaxRopeDims) + ")");

  if (f.find(p + "attention.layer_norm_rms_epsilon") != nullptr) {
    auto eps = f.get_float(p + "attention.layer_norm_rms_epsilon");
    if (!eps) return fail(eps.error().message);
    if (!(*eps > 0.0 && *eps < 1.0)) return fail("model: layer_norm_rms_epsilon out of range");
    c.rms_eps = static_cast<float>(*eps);
  }
  if (f.find(p + "rope.freq_base") != nullptr) {
    auto base = f.get_float(p + "rope.freq_base");
    if (!base) return fail(base.error().message);
    if (!(*base > 1.0 && std::isfinite(*base))) return fail("model: rope.freq_base out of range");
    c.rope_freq_base = static_cast<float>(*base);
  }

  const GgufTensorInfo* embd = f.tensor("token_embd.weight");
  if (embd == nullptr) return fail("model: missing tensor token_embd.weight");
  if (embd->dims.size() != 2 || embd->dims[0] != static_cast<uint64_t>(c.n_embd) || embd->dims[1] == 0 ||
      embd->dims[1] > kMaxVocab)
    return fail("model: token_embd.weight has an unexpected shape");
  c.n_vocab = static_cast<int>(embd->dims[1]);
  c.tied_output = f.tensor("output.weight") == nullptr;

  // LongRoPE (phi3's 128k-context variants) picks short or long factors by
  // the context size and rescales the rotated dimensions; not implemented,
  // so refused rather than run with the wrong positions.
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"})
    if (f.tensor(name) != nullptr)
      return fail(std::string("model: tensor ") + name +
                  " (LongRoPE scaling, as in 128k-context phi3 models) is not supported");
  if (const GgufTensorInfo* ff = f.tensor("rope_freqs.weight")) {
    if (ff->type != WeightType::F32 || ff->dims.size() != 1 || ff->dims[0] != static_cast<uint64_t>(c.n_rot / 2))
      return fail("model: rope_freqs.weight must be F32 with rope.dimension_count/2 entries");
    c.rope_freq_factors.resize(static_cast<std::size_t>(c.n_rot / 2));
    std::memcpy(c.rope_freq_factors.data(), ff->data, c.rope_freq_factors.size() * sizeof(float));
    for (float x : c.rope_freq_factors)
      if (!(x > 0.0f && std::isfinite(x))) return fail("model: rope_freqs.weight holds a non-positive factor");
  }
  return c;
}

RopeShiftParams rope_shift_params(const ModelConfig& config) {
  RopeShiftParams p;
  p.head_dim = config.head_dim;
  p.n_rot = config.n_rot;
  p.freq_base = config.rope_freq_base;
  p.freq_factors = config.rope_freq_factors.empty() ? nullptr : config.rope_freq_factors.data();
  p.neox = config.rope_layout == RopeLayout::NeoX;
  return p;
}

}  // namespace clm
