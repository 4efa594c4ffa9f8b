// Attention of one query token over one sequence's paged KV cache, and the
// write of a token's K/V into a block. The result for a query depends only on
// the K/V contents and positions of its sequence's slots, visited in slot
// order: never on where blocks lie in memory or what else is batched.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kv_geometry.h"

namespace clm {

// q, out: [n_heads][head_dim]. Query head h reads kv head h / (n_heads / n_kv_heads).
// Slot s lives in blocks[s / block_size] at row s % block_size; it takes part
// iff slot_positions[s] != -1 and slot_positions[s] <= query_pos. Scores are
// scale * q.k in f32; softmax subtracts the max; out = sum_s p_s v_s with the
// sums taken in slot order. With an f16 cache, q and p are rounded to f16
// before their products (f16 x f16 products, f32 sums), as llama.cpp does.
// A query that sees no slot gets out = 0.
// scratch: at least n_slots + head_dim floats. slot_mass: null, or n_slots floats to
// which each slot's probability, summed over heads, is added (for eviction
// statistics). Preconditions: n_heads a multiple of g.n_kv_heads.
void attend_paged(const float* q, int n_heads, const KvGeometry& g, int layer, std::byte* const* blocks,
                  const int32_t* slot_positions, int n_slots, int32_t query_pos, float scale, float* out,
                  float* scratch, float* slot_mass = nullptr);

// The part of attend_paged for query head `head` alone: it writes only that
// head's out and reads only that head's q, with the same operations, so
// heads may be spread over threads. scratch as for attend_paged, per caller;
// slot_mass gets that head's probabilities.
void attend_paged_head(const float* q, int n_heads, int head, const KvGeometry& g, int layer,
                       std::byte* const* blocks, const int32_t* slot_positions, int n_slots, int32_t query_pos,
                       float scale, float* out, float* scratch, float* slot_mass = nullptr);

// Stores one token's k, v ([n_kv_heads][head_dim] f32) at row offset_in_block
// of `block` for `layer`, converted to g.type (f16: round to nearest even).
void write_kv(const float* k, const float* v, const KvGeometry& g, int layer, std::byte* block,
              int offset_in_block);

}  // namespace clm
