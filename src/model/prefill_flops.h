// The arithmetic a prefill spends, counted per computed token, so that reuse
// can be stated as the fraction of a full prefill it still pays for. Counts
// the transformer blocks only (not the embedding lookup or the output head):
//   linear:    2 * (weights of the blocks' matmuls per token)
//              per layer: wq n_embd*n_heads*head_dim, wk and wv
//              n_embd*n_kv_heads*head_dim each, wo n_heads*head_dim*n_embd,
//              w1, w2, w3 n_embd*n_ff each
//   attention: 4 * n_layers * n_heads * head_dim * (context seen), where a
//              token at position p sees p + 1 slots (QK^T and the weighted
//              sum of V, two flops per multiply-add each)
// A probe (blend's first pass, model/batch.h) costs the layers before the
// probe layer in full, then the V projection of the probe layer (what it
// measures; it stops before Q and K); a token resumed there later costs the
// layers from the probe layer on.
#pragma once

#include <vector>

#include "model/model_config.h"

namespace clm {

class PrefillFlops {
 public:
  explicit PrefillFlops(const ModelConfig& config);

  double linear_per_token() const { return linear_; }
  // The V projection's share of one layer's linear arithmetic.
  double v_share_of_layer() const { return v_per_layer_ * n_layers_ / linear_; }
  // One token computed at position `pos` (0-based).
  double token(int pos) const;
  // One probe at `pos` measured at `probe_layer`.
  double probe(int pos, int probe_layer) const;
  // One token at `pos` resumed at `probe_layer` (model/batch.h): the layers
  // from there on.
  double resumed(int pos, int probe_layer) const;
  // Every token of a prompt of n tokens.
  double full(int n_tokens) const;
  // The tokens marked computed; computed[p] is position p.
  double computed(const std::vector<bool>& computed) const;

 private:
  int n_layers_ = 1;
  double linear_ = 0.0;
  double attention_per_slot_ = 0.0;
  double v_per_layer_ = 0.0;
};

}  // namespace clm
