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
// sums taken in slot order. With f16 K, q is rounded to f16 before q.k; with
// f16 V, p is rounded to f16 before p.v (f16 x f16 products, f32 sums), as
// llama.cpp does. f32, q8_0 and q4_0 rows meet the f32 operand as their
// exact f32 values (q8_0, q4_0: d * q, kv_row_codec.h).
// The arithmetic of each step, lane by lane, is attn_kernels.h's.
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

// Most queries attend_paged_head_group takes at once.
inline constexpr int kMaxGroupQueries = 8;
// Most queries one cascade takes: the decode rows of up to this many
// sequences read their shared K/V rows from memory once (and convert them
// from f16 once per register tile of queries).
inline constexpr int kMaxCascadeQueries = 32;
// Floats of scratch attend_paged_head_group needs.
inline std::size_t attend_group_scratch_floats(int n_queries, int n_slots, int head_dim) {
  return static_cast<std::size_t>(n_queries) * static_cast<std::size_t>(n_slots + head_dim);
}

// attend_paged_head for n_queries (1..kMaxGroupQueries) queries of one
// sequence at once: query i reads q + i * q_stride, writes out + i * out_stride
// (each laid out as for attend_paged_head) and has position query_pos[i], in
// any order. Each K/V row is read once for the whole group (and converted
// from f16 once per register tile of queries) instead of once per query,
// which is what prefill spends its attention time on. Every query's output is bitwise what attend_paged_head gives for it
// alone: the operations per query and their order are the same, so a token's
// result does not depend on which tokens share its group.
// scratch: attend_group_scratch_floats(n_queries, n_slots, g.head_dim) floats.
// slot_mass: null, or n_slots floats to which each slot's probability is
// added, query after query in group order (a query's masked slots add 0).
void attend_paged_head_group(const float* q, std::size_t q_stride, int n_queries, int n_heads, int head,
                             const KvGeometry& g, int layer, std::byte* const* blocks, const int32_t* slot_positions,
                             int n_slots, const int32_t* query_pos, float scale, float* out, std::size_t out_stride,
                             float* scratch, float* slot_mass = nullptr);

// One query of a cascade: its own sequence's view of the cache.
struct CascadeQuery {
  const float* q;                 // [n_heads][head_dim]
  float* out;                     // [n_heads][head_dim]
  std::byte* const* blocks;       // its sequence's blocks, slot / block_size indexes
  const int32_t* slot_positions;  // its sequence's slot positions
  int n_slots;
  int32_t pos;
  float* slot_mass = nullptr;     // null, or n_slots floats its probabilities are added to
};

// Cascade attention: n_queries (1..kMaxCascadeQueries) queries, possibly of
// different sequences, whose first shared_slots slots are the same blocks
// holding the same positions (a shared prefix). The shared slots' K/V rows are
// read once for all of them, the rest of each query's slots alone. Each
// query's output (and mass) is bitwise what attend_paged_head gives for it
// alone: its scores, softmax and p.V chain are the same operations in the same
// slot order; only which queries share a load changes. attend_paged_head_group
// is the case of one sequence, where every slot is shared.
// scratch: attend_group_scratch_floats(n_queries, max n_slots, g.head_dim).
void attend_paged_head_cascade(const CascadeQuery* queries, int n_queries, int shared_slots, int n_heads, int head,
                               const KvGeometry& g, int layer, float scale, float* scratch);

// Stores one token's k, v ([n_kv_heads][head_dim] f32) at row offset_in_block
// of `block` for `layer`, K as g.types.k and V as g.types.v (f16: round to
// nearest even; q8_0, q4_0: quantize_q8_0_row, quantize_q4_0_row, one
// token's row alone).
void write_kv(const float* k, const float* v, const KvGeometry& g, int layer, std::byte* block,
              int offset_in_block);

// How far one token's v (as write_kv takes it) lies from the V that row
// offset_in_block of `block` holds for `layer`: the sum of squared
// differences over every V element, the stored ones read as f32. (V, not
// K: a shifted K differs by rotation rounding alone, and measured on
// docs/QUALITY.md's cases V picks the tokens worth recomputing better.)
double v_deviation(const float* v, const KvGeometry& g, int layer, const std::byte* block, int offset_in_block);

}  // namespace clm
