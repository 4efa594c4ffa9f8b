// Element-wise and per-row operations of the forward pass. Each is a fixed
// sequence of operations on its own row, so results never depend on what else
// is in the batch.
#pragma once

namespace clm {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i]. The sum of squares is
// accumulated in double, in index order. out may alias x.
void rmsnorm(const float* x, const float* weight, int n, float eps, float* out);

// The most dimensions per head rope() rotates (its cos/sin table is on the
// stack); models that rotate more are refused at load.
constexpr int kMaxRopeDims = 1024;

// Rotary position embedding of n_heads vectors of head_dim, in place. Pair i
// (i < n_rot / 2) is rotated by theta_i = pos * base^(-2i / n_rot) / factor[i]
// (factor 1 when freq_factors is null). Adjacent layout rotates elements
// (2i, 2i+1); neox rotates (i, i + n_rot/2). Elements >= n_rot are untouched.
// The angle is computed in float as the GGUF reference does, by repeated
// multiplication: theta_0 = pos, theta_{i+1} = theta_i * powf(base, -2/n_rot);
// cosf/sinf of it. Precondition: n_rot even, n_rot <= head_dim, n_rot <= kMaxRopeDims.
void rope(float* vec, int n_heads, int head_dim, int n_rot, int pos, float freq_base, const float* freq_factors,
          bool neox);

// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void silu_mul(float* gate, const float* up, int n);

// In place, max-subtracted; the sum runs in index order. n >= 1.
void softmax(float* x, int n);

// x[i] += b[i].
void add_bias(float* x, const float* b, int n);

}  // namespace clm
