#include "kernels/attention.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <limits>

#include "kernels/attn_kernels.h"
#include "kernels/kv_row_codec.h"
#include "kernels/vec_dot.h"

namespace clm {

static_assert(kMaxCascadeQueries <= kAttnMaxQueries);

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// With an f16 cache both operands of each product are f16 values: the query
// against f16 K and the probabilities against f16 V. That is llama.cpp's
// precision with an f16 cache, so the golden outputs it produced are
// reproduced closely. Against f32, q8_0 or q4_0 rows the operand stays f32.
void round_to_f16(const AttnKernels& a, const VecKernels& v, const float* x, std::size_t n, float* dst) {
  std::array<std::byte, 512> half;
  for (std::size_t i = 0; i < n; i += half.size() / 2) {
    const std::size_t m = std::min(half.size() / 2, n - i);
    a.f32_to_f16_row(x + i, half.data(), m);
    v.f16_to_f32_row(half.data(), dst + i, m);
  }
}

// What attend_paged_head and attend_paged_head_group share, so that a query's
// operations are the same in both.
struct HeadView {
  HeadView(const KvGeometry& g, int layer, int n_heads, int head, std::byte* const* b)
      : blocks(b),
        hd(static_cast<std::size_t>(g.head_dim)),
        k_row(g.k_row_bytes()),
        v_row(g.v_row_bytes()),
        bs(g.block_size),
        q_f16(g.types.k == KvType::F16),
        p_f16(g.types.v == KvType::F16),
        k_kernels(active_attn_kernels().rows(g.types.k)),
        v_kernels(active_attn_kernels().rows(g.types.v)) {
    const int kvh = head / (n_heads / g.n_kv_heads);
    k_off = g.k_offset(layer, kvh);
    v_off = g.v_offset(layer, kvh);
  }
  std::byte* const* blocks;
  std::size_t hd, k_row, v_row;
  int bs;
  bool q_f16;  // the query rounded to f16 (f16 K)
  bool p_f16;  // the probabilities rounded to f16 (f16 V)
  const KvRowKernels& k_kernels;
  const KvRowKernels& v_kernels;
  std::size_t k_off = 0, v_off = 0;

  const std::byte* k_slot(int s) const { return blocks[s / bs] + k_off + static_cast<std::size_t>(s % bs) * k_row; }
  const std::byte* v_slot(int s) const { return blocks[s / bs] + v_off + static_cast<std::size_t>(s % bs) * v_row; }
  // Slots [s, s + chunk(s, end)) are consecutive rows of one block, at most kAttnMaxRows.
  int chunk(int s, int end) const { return std::min({kAttnMaxRows, bs - s % bs, end - s}); }
};

// Asks for the n_rows rows at `rows` (row_bytes each, consecutive) to be
// brought into cache while the current chunk is worked on: a cascade spends
// long enough on each shared chunk (every query's products) for the next
// one to arrive, and chunks of different blocks lie apart in memory, where
// the hardware's stream detection does not follow.
void prefetch_rows(const std::byte* rows, int n_rows, std::size_t row_bytes) {
  const std::size_t bytes = static_cast<std::size_t>(n_rows) * row_bytes;
  for (std::size_t at = 0; at < bytes; at += 64) __builtin_prefetch(rows + at);
}

// Scores (masked ones -inf) to probabilities in place; the same calls for a
// query whichever kernel it goes through. Slots past `end` would all be -inf,
// which adds exactly nothing to max or sum, so a longer `end` gives the same
// probabilities.
void softmax(const AttnKernels& a, float* s, int end, bool f16) {
  const std::size_t n = static_cast<std::size_t>(end);
  const float max = a.max_row(s, n);
  const double sum = a.exp_sum_row(s, n, max);
  a.scale_row(s, n, static_cast<float>(1.0 / sum), f16);
}

// One past the last slot a query at query_pos sees (0 for none). Scanned from
// the end, since the last visible slot is nearly always among the last.
int visible_end(const int32_t* slot_positions, int n_slots, int32_t query_pos) {
  for (int s = n_slots; s > 0; --s)
    if (slot_positions[s - 1] != -1 && slot_positions[s - 1] <= query_pos) return s;
  return 0;
}

// Scores of slots the query does not see become -inf. Branch-free, so the
// compiler vectorises it: it runs once per query and head over every slot.
void mask_scores(float* scores, const int32_t* slot_positions, int end, int32_t query_pos) {
  for (int s = 0; s < end; ++s) {
    const int32_t p = slot_positions[s];
    scores[s] = ((p == -1) | (p > query_pos)) ? kNegInf : scores[s];
  }
}

// The latest position among slots [0, end), or INT32_MAX when one of them is
// empty (-1): a query at or past the result sees every one of those slots.
// Branch-free, so the compiler vectorises it.
int32_t all_seen_from(const int32_t* slot_positions, int end) {
  int32_t latest = -1;
  bool empty = false;
  for (int s = 0; s < end; ++s) {
    latest = std::max(latest, slot_positions[s]);
    empty |= slot_positions[s] == -1;
  }
  return empty ? std::numeric_limits<int32_t>::max() : latest;
}

// Eviction statistics: each slot's probability added to its running mass.
// Plain element-wise adds, which the compiler vectorises on any path.
void add_row(const float* p, int n, float* mass) {
  for (int s = 0; s < n; ++s) mass[s] += p[s];
}

}  // namespace

void attend_paged_head(const float* q, int n_heads, int head, const KvGeometry& g, int layer,
                       std::byte* const* blocks, const int32_t* slot_positions, int n_slots, int32_t query_pos,
                       float scale, float* out, float* scratch, float* slot_mass) {
  assert(g.n_kv_heads > 0 && n_heads % g.n_kv_heads == 0 && head >= 0 && head < n_heads);
  const AttnKernels& a = active_attn_kernels();
  const HeadView hv(g, layer, n_heads, head, blocks);
  const std::size_t hd = hv.hd;

  const float* qh = q + static_cast<std::size_t>(head) * hd;
  if (hv.q_f16) {
    round_to_f16(a, active_vec_kernels(), qh, hd, scratch + n_slots);
    qh = scratch + n_slots;
  }
  float* oh = out + static_cast<std::size_t>(head) * hd;
  std::fill(oh, oh + hd, 0.0f);

  const int end = visible_end(slot_positions, n_slots, query_pos);
  if (end == 0) return;

  for (int s = 0; s < end;) {
    const int n = hv.chunk(s, end);
    hv.k_kernels.scores(hv.k_slot(s), hv.k_row, n, qh, hd, 1, hd, scale, scratch + s, 0);
    s += n;
  }
  mask_scores(scratch, slot_positions, end, query_pos);
  softmax(a, scratch, end, hv.p_f16);

  for (int s = 0; s < end;) {
    const int n = std::min(hv.bs - s % hv.bs, end - s);
    hv.v_kernels.pv(scratch + s, hv.v_slot(s), hv.v_row, n, hd, oh);
    s += n;
  }
  // Masked slots hold probability +0 here, so adding them changes nothing.
  if (slot_mass) add_row(scratch, end, slot_mass);
}

void attend_paged_head_group(const float* q, std::size_t q_stride, int n_queries, int n_heads, int head,
                             const KvGeometry& g, int layer, std::byte* const* blocks, const int32_t* slot_positions,
                             int n_slots, const int32_t* query_pos, float scale, float* out, std::size_t out_stride,
                             float* scratch, float* slot_mass) {
  assert(n_queries >= 1 && n_queries <= kMaxGroupQueries);
  CascadeQuery queries[kMaxGroupQueries];
  for (int i = 0; i < n_queries; ++i) {
    const std::size_t at = static_cast<std::size_t>(i);
    queries[i] = {q + at * q_stride, out + at * out_stride, blocks, slot_positions, n_slots, query_pos[i], slot_mass};
  }
  attend_paged_head_cascade(queries, n_queries, n_slots, n_heads, head, g, layer, scale, scratch);
}

void attend_paged_head_cascade(const CascadeQuery* queries, int n_queries, int shared_slots, int n_heads, int head,
                               const KvGeometry& g, int layer, float scale, float* scratch) {
  assert(g.n_kv_heads > 0 && n_heads % g.n_kv_heads == 0 && head >= 0 && head < n_heads);
  assert(n_queries >= 1 && n_queries <= kMaxCascadeQueries);
  const AttnKernels& a = active_attn_kernels();
  const VecKernels& vk = active_vec_kernels();
  const HeadView hv(g, layer, n_heads, head, queries[0].blocks);
  const std::size_t hd = hv.hd;
  const std::size_t nq = static_cast<std::size_t>(n_queries);
  int max_slots = 0;
  for (std::size_t i = 0; i < nq; ++i) {
    assert(queries[i].n_slots >= shared_slots);
    max_slots = std::max(max_slots, queries[i].n_slots);
  }
  const std::size_t ns = static_cast<std::size_t>(max_slots);

  float* scores = scratch;        // [nq][max_slots]: scores, then probabilities
  float* qs = scratch + nq * ns;  // [nq][head_dim]: the queries, contiguous

  // end[i]: one past the last slot query i sees; it attends over [0, end[i]).
  // A longer range would only add masked slots, which change nothing.
  int end[kMaxCascadeQueries] = {};
  int shared_end = 0;  // one past the last shared slot any query sees
  for (std::size_t i = 0; i < nq; ++i) {
    const CascadeQuery& cq = queries[i];
    const float* qi = cq.q + static_cast<std::size_t>(head) * hd;
    if (hv.q_f16)
      round_to_f16(a, vk, qi, hd, qs + i * hd);
    else
      std::copy(qi, qi + hd, qs + i * hd);
    float* oi = cq.out + static_cast<std::size_t>(head) * hd;
    std::fill(oi, oi + hd, 0.0f);
    end[i] = visible_end(cq.slot_positions, cq.n_slots, cq.pos);
    shared_end = std::max(shared_end, std::min(end[i], shared_slots));
  }
  const int32_t* shared_positions = queries[0].slot_positions;
  // Decode rows see the whole shared prefix: masking it, query after query,
  // would leave every score as it is, so it is skipped for them.
  const int32_t shared_seen_from = all_seen_from(shared_positions, shared_end);
  auto chunk_seen = [&](int s, int n) {
    for (std::size_t i = 0; i < nq; ++i)
      for (int t = s; t < std::min(s + n, end[i]); ++t)
        if (shared_positions[t] != -1 && shared_positions[t] <= queries[i].pos) return true;
    return false;
  };

  // Scores. A shared K chunk is scored for every query in one call, which
  // reads it from memory and converts it once for all of them; a score is the
  // same whichever rows and queries share its call.
  for (int s = 0; s < shared_end;) {
    const int n = hv.chunk(s, shared_end);
    if (s + n < shared_end) prefetch_rows(hv.k_slot(s + n), hv.chunk(s + n, shared_end), hv.k_row);
    if (chunk_seen(s, n)) hv.k_kernels.scores(hv.k_slot(s), hv.k_row, n, qs, hd, n_queries, hd, scale, scores + s, ns);
    s += n;
  }
  for (std::size_t i = 0; i < nq; ++i) {
    const HeadView own(g, layer, n_heads, head, queries[i].blocks);
    for (int s = shared_slots; s < end[i];) {
      const int n = own.chunk(s, end[i]);
      own.k_kernels.scores(own.k_slot(s), own.k_row, n, qs + i * hd, hd, 1, hd, scale, scores + i * ns + s, 0);
      s += n;
    }
  }
  // Mask, softmax and statistics, query by query. Shared slots past a
  // query's end get probability 0, which p.V skips: so every query can take
  // every shared row below, and visits exactly its own slots.
  for (std::size_t i = 0; i < nq; ++i) {
    float* si = scores + i * ns;
    if (end[i] < shared_end) std::fill(si + end[i], si + shared_end, 0.0f);
    if (end[i] == 0) continue;
    const CascadeQuery& cq = queries[i];
    const int unmasked = cq.pos >= shared_seen_from ? std::min(shared_end, end[i]) : 0;
    mask_scores(si + unmasked, cq.slot_positions + unmasked, end[i] - unmasked, cq.pos);
    softmax(a, si, end[i], hv.p_f16);
    // Masked slots hold probability +0 here, so adding them changes nothing.
    if (cq.slot_mass) add_row(si, end[i], cq.slot_mass);
  }

  // p.V. Each shared block's V rows are read for all queries in one call,
  // which converts each V vector once per register tile of queries. Each
  // query then runs on over its own rows, in slot order.
  float* outs[kMaxCascadeQueries];
  for (std::size_t i = 0; i < nq; ++i) outs[i] = queries[i].out + static_cast<std::size_t>(head) * hd;
  for (int s = 0; s < shared_end;) {
    const int n = std::min(hv.bs - s % hv.bs, shared_end - s);
    if (s + n < shared_end) prefetch_rows(hv.v_slot(s + n), std::min(hv.bs, shared_end - s - n), hv.v_row);
    if (chunk_seen(s, n)) hv.v_kernels.pv_queries(scores + s, ns, n_queries, hv.v_slot(s), hv.v_row, n, hd, outs);
    s += n;
  }
  for (std::size_t i = 0; i < nq; ++i) {
    const HeadView own(g, layer, n_heads, head, queries[i].blocks);
    for (int s = shared_slots; s < end[i];) {
      const int n = std::min(own.bs - s % own.bs, end[i] - s);
      own.v_kernels.pv(scores + i * ns + s, own.v_slot(s), own.v_row, n, hd,
         queries[i].out + static_cast<std::size_t>(head) * hd);
      s += n;
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
  const AttnKernels& a = active_attn_kernels();
  const std::size_t hd = static_cast<std::size_t>(g.head_dim);
  const std::size_t k_at = static_cast<std::size_t>(offset_in_block) * g.k_row_bytes();
  const std::size_t v_at = static_cast<std::size_t>(offset_in_block) * g.v_row_bytes();
  // f16 through the path's converter (the same bits as f32_to_f16, faster);
  // every other type through the one scalar codec.
  auto store = [&](KvType type, const float* src, std::byte* dst) {
    if (type == KvType::F16)
      a.f32_to_f16_row(src, dst, hd);
    else
      encode_kv_row(type, src, g.head_dim, dst);
  };
  for (int h = 0; h < g.n_kv_heads; ++h) {
    const std::size_t src = static_cast<std::size_t>(h) * hd;
    store(g.types.k, k + src, block + g.k_offset(layer, h) + k_at);
    store(g.types.v, v + src, block + g.v_offset(layer, h) + v_at);
  }
}

double v_deviation(const float* v, const KvGeometry& g, int layer, const std::byte* block, int offset_in_block) {
  const std::size_t hd = static_cast<std::size_t>(g.head_dim);
  const std::size_t at = static_cast<std::size_t>(offset_in_block) * g.v_row_bytes();
  double sum = 0.0;
  for (int h = 0; h < g.n_kv_heads; ++h) {
    const std::size_t src = static_cast<std::size_t>(h) * hd;
    const std::byte* v_row = block + g.v_offset(layer, h) + at;
    for (std::size_t i = 0; i < hd; ++i) {
      const double dv = static_cast<double>(v[src + i]) - read_kv_element(g.types.v, v_row, i);
      sum += dv * dv;
    }
  }
  return sum;
}

}  // namespace clm
