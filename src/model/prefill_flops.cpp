#include "model/prefill_flops.h"

namespace clm {

PrefillFlops::PrefillFlops(const ModelConfig& c) {
  const double embd = c.n_embd;
  const double q_dim = static_cast<double>(c.n_heads) * c.head_dim;
  const double kv_dim = static_cast<double>(c.n_kv_heads) * c.head_dim;
  const double per_layer = embd * q_dim + 2.0 * embd * kv_dim + q_dim * embd + 3.0 * embd * c.n_ff;
  n_layers_ = c.n_layers;
  linear_ = 2.0 * c.n_layers * per_layer;
  attention_per_slot_ = 4.0 * c.n_layers * q_dim;
  v_per_layer_ = 2.0 * embd * kv_dim;
}

double PrefillFlops::probe(int pos, int probe_layer) const {
  const double share = static_cast<double>(probe_layer) / n_layers_;
  return share * token(pos) + v_per_layer_;
}

double PrefillFlops::resumed(int pos, int probe_layer) const {
  const double share = static_cast<double>(n_layers_ - probe_layer) / n_layers_;
  return share * token(pos);
}

double PrefillFlops::token(int pos) const { return linear_ + attention_per_slot_ * (pos + 1); }

double PrefillFlops::full(int n_tokens) const {
  // Sum over p of (p + 1) is n (n + 1) / 2.
  const double n = n_tokens;
  return linear_ * n + attention_per_slot_ * n * (n + 1.0) / 2.0;
}

double PrefillFlops::computed(const std::vector<bool>& computed) const {
  double total = 0.0;
  for (std::size_t p = 0; p < computed.size(); ++p)
    if (computed[p]) total += token(static_cast<int>(p));
  return total;
}

}  // namespace clm
