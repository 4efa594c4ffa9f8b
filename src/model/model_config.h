// Hyperparameters of a llama-family model, read from GGUF metadata and
// checked for consistency before any buffer is sized by them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/rope_shift.h"
#include "model/gguf.h"
#include "util/error.h"

namespace clm {

enum class Arch { Llama, Qwen2, Qwen3, Phi3 };
// Llama's "normal" RoPE rotates adjacent pairs (2i, 2i+1); NeoX rotates
// (i, i + n_rot/2). qwen2, qwen3 and phi3 use NeoX.
enum class RopeLayout { Adjacent, NeoX };

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string arch_name;   // as in general.architecture
  std::string name;        // general.name, if any
  int n_vocab = 0;
  int n_embd = 0;
  int n_ff = 0;
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int n_rot = 0;           // rotated dimensions per head
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  RopeLayout rope_layout = RopeLayout::Adjacent;
  std::vector<float> rope_freq_factors;  // llama-3 style, n_rot/2 entries, empty if none
  bool tied_output = false;              // output.weight absent: reuse token_embd
  bool qkv_bias = false;                 // qwen2
  bool qk_norm = false;                  // qwen3: RMS norm of each q and k head before RoPE
  bool fused_qkv = false;                // phi3: one attn_qkv matrix holds Q, K, V rows
  bool fused_gate_up = false;            // phi3: ffn_up holds the gate rows, then the up rows
};

Result<ModelConfig> read_model_config(const GgufFile& file);

// The model's RoPE as the K re-rotation kernel needs it; points into `config`.
RopeShiftParams rope_shift_params(const ModelConfig& config);

}  // namespace clm
