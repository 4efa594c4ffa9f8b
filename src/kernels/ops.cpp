#include "kernels/ops.h"

#include <cassert>
#include <cmath>

namespace clm {

void rmsnorm(const float* x, const float* weight, int n, float eps, float* out) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum / n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void rope(float* vec, int n_heads, int head_dim, int n_rot, int pos, float freq_base, const float* freq_factors,
          bool neox) {
  const int half = n_rot / 2;
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  // One cos/sin per pair, shared by all heads; pairs are few (<= head_dim/2),
  // so the table lives on the stack.
  constexpr int kMaxPairs = kMaxRopeDims / 2;
  float cos_t[kMaxPairs];
  float sin_t[kMaxPairs];
  assert(n_rot % 2 == 0 && n_rot <= head_dim && half <= kMaxPairs);
  float theta = static_cast<float>(pos);
  for (int i = 0; i < half && i < kMaxPairs; ++i) {
    const float t = freq_factors ? theta / freq_factors[i] : theta;
    cos_t[i] = std::cos(t);
    sin_t[i] = std::sin(t);
    theta *= theta_scale;
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = vec + static_cast<long>(h) * head_dim;
    for (int i = 0; i < half && i < kMaxPairs; ++i) {
      const int a = neox ? i : 2 * i;
      const int b = neox ? i + half : 2 * i + 1;
      const float x0 = v[a];
      const float x1 = v[b];
      v[a] = x0 * cos_t[i] - x1 * sin_t[i];
      v[b] = x0 * sin_t[i] + x1 * cos_t[i];
    }
  }
}

void silu_mul(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void softmax(float* x, int n) {
  float max = x[0];
  for (int i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

void add_bias(float* x, const float* b, int n) {
  for (int i = 0; i < n; ++i) x[i] += b[i];
}

}  // namespace clm
