// The tensors of a llama-family model bound to their roles. Matrices are used
// in place from the memory map (fused ones, as phi3 stores them, as row-range
// views), except that the F16 / BF16 ones matmul multiplies are repacked into
// panels of their own (float_panels.h) at load; small vectors (norms, biases) are converted to f32 once at load. Every tensor's shape and type is checked here so the
// forward pass can trust them.
#pragma once

#include <vector>

#include "kernels/matmul.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "util/error.h"
#include "util/huge_page_region.h"

namespace clm {

struct LayerWeights {
  const float* attn_norm = nullptr;  // [n_embd]
  WeightMatrix wq;                   // [n_heads*head_dim][n_embd]
  WeightMatrix wk;                   // [n_kv_heads*head_dim][n_embd]
  WeightMatrix wv;                   // [n_kv_heads*head_dim][n_embd]
  WeightMatrix wo;                   // [n_embd][n_heads*head_dim]
  const float* bq = nullptr;         // qwen2 only
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;     // qwen3 only: [head_dim], shared by every q head
  const float* k_norm = nullptr;     // qwen3 only: [head_dim], shared by every k head
  const float* ffn_norm = nullptr;   // [n_embd]
  WeightMatrix w_gate;               // [n_ff][n_embd]
  WeightMatrix w_up;                 // [n_ff][n_embd]
  WeightMatrix w_down;               // [n_embd][n_ff]
};

struct ModelWeights {
  WeightMatrix token_embd;           // [n_vocab][n_embd], rows looked up
  const float* output_norm = nullptr;
  WeightMatrix output;               // [n_vocab][n_embd]; token_embd when tied
  std::vector<LayerWeights> layers;
  std::vector<std::vector<float>> owned;  // storage of the f32 vectors above
  // The panel copies of the F16 / BF16 matrices multiplied above (their
  // `panels`), in one read-only region of huge pages (decode streams them as
  // it would the weights); token_embd's rows are looked up from the file.
  HugePageRegion panels;
};

// With release_packed_file_bytes, each matrix's bytes in the file are given
// back (util/release_pages.h) as soon as its panels are made, so that a
// F16 / BF16 model's two copies never exist together; the token embedding's
// rows, which are looked up, stay.
Result<ModelWeights> bind_weights(const GgufFile& file, const ModelConfig& config,
                                  bool release_packed_file_bytes = false);

}  // namespace clm
