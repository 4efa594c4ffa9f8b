// What the forward pass sees of the KV cache: for each sequence of a batch,
// the base address of each of its blocks in slot order and the position held
// by each slot. The cache layer builds it; the model only reads positions and
// reads/writes K/V bytes through it. It knows nothing of refcounts or policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/kv_geometry.h"

namespace clm {

constexpr int32_t kEmptySlot = -1;

struct KvSeqView {
  std::span<std::byte* const> blocks;        // block base pointers, slot / block_size indexes
  std::span<const int32_t> slot_positions;   // position of each slot, kEmptySlot if unfilled
  // Attention statistics for eviction, in buffers the sequence owns; empty
  // (the default) collects nothing and costs nothing. When given, both are as
  // long as slot_positions, and a forward call adds to slot_mass[s] the
  // softmax probability slot s received, summed over every layer, head and
  // query of the sequence in the call, and to slot_queries[s] the number of
  // those queries that could see slot s.
  std::span<float> slot_mass = {};
  std::span<uint32_t> slot_queries = {};
};

struct KvView {
  KvGeometry geometry;
  std::span<const KvSeqView> seqs;
};

}  // namespace clm
