#include "kernels/attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/vec_dot.h"
#include "util/half.h"

namespace clm {

namespace {

void store_row(const float* src, std::size_t n, KvType type, std::byte* dst) {
  if (type == KvType::F32) {
    std::memcpy(dst, src, n * sizeof(float));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_f16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

// With an f16 cache both operands of each product are f16 values: the query
// against K and the probabilities against V. That is llama.cpp's precision
// with an f16 cache, so the golden outputs it produced are reproduced closely.
const float* round_to_f16(const float* x, std::size_t n, float* dst) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(f32_to_f16(x[i]));
  return dst;
}

}  // namespace

void attend_paged_head(const float* q, int n_heads, int head, const KvGeometry& g, int layer,
                       std::byte* const* blocks, const int32_t* slot_positions, int n_slots, int32_t query_pos,
                       float scale, float* out, float* scratch, float* slot_mass) {
  assert(g.n_kv_heads > 0 && n_heads % g.n_kv_heads == 0 && head >= 0 && head < n_heads);
  const VecKernels& k = active_vec_kernels();
  const auto dot = g.type == KvType::F16 ? k.dot_f16 : k.dot_f32;
  const auto axpy = g.type == KvType::F16 ? k.axpy_f16 : k.axpy_f32;
  const std::size_t hd = static_cast<std::size_t>(g.head_dim);
  const std::size_t row = hd * g.elem_bytes();
  const int bs = g.block_size;
  const int kvh = head / (n_heads / g.n_kv_heads);
  auto visible = [&](int s) { return slot_positions[s] != -1 && slot_positions[s] <= query_pos; };
  auto slot_row = [&](int s) { return blocks[s / bs] + static_cast<std::size_t>(s % bs) * row; };

  const std::size_t k_off = g.k_offset(layer, kvh);
  const std::size_t v_off = g.v_offset(layer, kvh);
  const float* qh = q + static_cast<std::size_t>(head) * hd;
  if (g.type == KvType::F16) qh = round_to_f16(qh, hd, scratch + n_slots);
  float* oh = out + static_cast<std::size_t>(head) * hd;
  std::fill(oh, oh + hd, 0.0f);

  float max = -std::numeric_limits<float>::infinity();
  bool any = false;
  for (int s = 0; s < n_slots; ++s) {
    if (!visible(s)) continue;
    scratch[s] = dot(slot_row(s) + k_off, qh, hd) * scale;
    max = std::fmax(max, scratch[s]);
    any = true;
  }
  if (!any) return;

  double sum = 0.0;
  for (int s = 0; s < n_slots; ++s) {
    if (!visible(s)) continue;
    scratch[s] = std::exp(scratch[s] - max);
    sum += scratch[s];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int s = 0; s < n_slots; ++s) {
    if (!visible(s)) continue;
    float p = scratch[s] * inv;
    if (g.type == KvType::F16) p = f16_to_f32(f32_to_f16(p));
    axpy(p, slot_row(s) + v_off, oh, hd);
    if (slot_mass) slot_mass[s] += p;
  }
}

void attend_paged_head_group(const float* q, std::size_t q_stride, int n_queries, int n_heads, int head,
                             const KvGeometry& g, int layer, std::byte* const* blocks, const int32_t* slot_positions,
                             int n_slots, const int32_t* query_pos, float scale, float* out, std::size_t out_stride,
                             float* scratch) {
  assert(g.n_kv_heads > 0 && n_heads % g.n_kv_heads == 0 && head >= 0 && head < n_heads);
  assert(n_queries >= 1 && n_queries <= kMaxGroupQueries);
  const VecKernels& k = active_vec_kernels();
  const bool f16 = g.type == KvType::F16;
  const std::size_t hd = static_cast<std::size_t>(g.head_dim);
  const std::size_t row = hd * g.elem_bytes();
  const std::size_t ns = static_cast<std::size_t>(n_slots);
  const std::size_t nq = static_cast<std::size_t>(n_queries);
  const int bs = g.block_size;
  const int kvh = head / (n_heads / g.n_kv_heads);
  auto slot_row = [&](int s) { return blocks[s / bs] + static_cast<std::size_t>(s % bs) * row; };
  const std::size_t k_off = g.k_offset(layer, kvh);
  const std::size_t v_off = g.v_offset(layer, kvh);

  float* scores = scratch;              // [nq][n_slots]: scores, then probabilities
  float* qs = scratch + nq * ns;        // [nq][head_dim]: the queries, contiguous for dot4
  float* k_row = qs + nq * hd;          // one K row as f32
  float* v_row = k_row + hd;            // one V row as f32
  // The f32 dot and axpy over a converted row give bitwise what the f16 ones
  // give over the stored row (the conversion is exact), so the per-query
  // arithmetic is attend_paged_head's.
  auto k_of = [&](int s) {
    const std::byte* p = slot_row(s) + k_off;
    if (!f16) return p;
    k.f16_to_f32_row(p, k_row, hd);
    return reinterpret_cast<const std::byte*>(k_row);
  };
  auto v_of = [&](int s) {
    const std::byte* p = slot_row(s) + v_off;
    if (!f16) return p;
    k.f16_to_f32_row(p, v_row, hd);
    return reinterpret_cast<const std::byte*>(v_row);
  };

  int32_t latest = -1;
  for (std::size_t i = 0; i < nq; ++i) {
    const float* qi = q + i * q_stride + static_cast<std::size_t>(head) * hd;
    if (f16)
      round_to_f16(qi, hd, qs + i * hd);
    else
      std::copy(qi, qi + hd, qs + i * hd);
    float* oi = out + i * out_stride + static_cast<std::size_t>(head) * hd;
    std::fill(oi, oi + hd, 0.0f);
    latest = std::max(latest, query_pos[i]);
  }
  // Slots past the last one any query sees need no visit.
  int end = 0;
  for (int s = 0; s < n_slots; ++s)
    if (slot_positions[s] != -1 && slot_positions[s] <= latest) end = s + 1;
  // Bit i: query i sees the slot.
  auto seen_by = [&](int s) {
    unsigned mask = 0;
    const int32_t pos = slot_positions[s];
    if (pos == -1) return mask;
    for (std::size_t i = 0; i < nq; ++i)
      if (pos <= query_pos[i]) mask |= 1u << i;
    return mask;
  };

  float max[kMaxGroupQueries];
  std::fill(max, max + nq, -std::numeric_limits<float>::infinity());
  unsigned any = 0;
  for (int s = 0; s < end; ++s) {
    const unsigned seen = seen_by(s);
    if (seen == 0) continue;
    const std::byte* kr = k_of(s);
    float dots[kMaxGroupQueries];
    std::size_t i = 0;
    for (; i + 4 <= nq; i += 4) k.dot4_f32(kr, qs + i * hd, hd, hd, dots + i);
    for (; i < nq; ++i) dots[i] = k.dot_f32(kr, qs + i * hd, hd);
    for (i = 0; i < nq; ++i) {
      if (!((seen >> i) & 1u)) continue;
      float& score = scores[i * ns + static_cast<std::size_t>(s)];
      score = dots[i] * scale;
      max[i] = std::fmax(max[i], score);
    }
    any |= seen;
  }
  if (any == 0) return;

  for (std::size_t i = 0; i < nq; ++i) {
    if (!((any >> i) & 1u)) continue;
    float* si = scores + i * ns;
    const int32_t qp = query_pos[i];
    auto visible = [&](int s) { return slot_positions[s] != -1 && slot_positions[s] <= qp; };
    double sum = 0.0;
    for (int s = 0; s < end; ++s) {
      if (!visible(s)) continue;
      si[s] = std::exp(si[s] - max[i]);
      sum += si[s];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int s = 0; s < end; ++s) {
      if (!visible(s)) continue;
      float p = si[s] * inv;
      if (f16) p = f16_to_f32(f32_to_f16(p));
      si[s] = p;
    }
  }

  for (int s = 0; s < end; ++s) {
    const unsigned seen = seen_by(s);
    if (seen == 0) continue;
    const std::byte* vr = v_of(s);
    for (std::size_t i = 0; i < nq; ++i) {
      if (!((seen >> i) & 1u)) continue;
      k.axpy_f32(scores[i * ns + static_cast<std::size_t>(s)], vr,
                 out + i * out_stride + static_cast<std::size_t>(head) * hd, hd);
    }
  }
}

void attend_paged(const float* q, int n_heads, const KvGeometry& g, int layer, std::byte* const* blocks,
                  const int32_t* slot_positions, int n_slots, int32_t query_pos, float scale, float* out,
                  float* scratch, float* slot_mass) {
  for (int h = 0; h < n_heads; ++h)
    attend_paged_head(q, n_heads, h, g, layer, blocks, slot_positions, n_slots, query_pos, scale, out, scratch,
                      slot_mass);
}

void write_kv(const float* k, const float* v, const KvGeometry& g, int layer, std::byte* block,
              int offset_in_block) {
  const std::size_t hd = static_cast<std::size_t>(g.head_dim);
  const std::size_t at = static_cast<std::size_t>(offset_in_block) * hd * g.elem_bytes();
  for (int h = 0; h < g.n_kv_heads; ++h) {
    const std::size_t src = static_cast<std::size_t>(h) * hd;
    store_row(k + src, hd, g.type, block + g.k_offset(layer, h) + at);
    store_row(v + src, hd, g.type, block + g.v_offset(layer, h) + at);
  }
}

}  // namespace clm
