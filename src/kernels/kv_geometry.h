// Geometry of one physical KV block: K and V of every layer for block_size
// tokens. Inside a block the layout is [layer][K|V][kv_head][token][row],
// so one head's keys for the block are contiguous (what attention streams).
// A row is one token's head_dim elements in its type's layout (kv_type.h);
// K and V may have different types, hence different row sizes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kv_type.h"

namespace clm {

struct KvGeometry {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 32;
  KvTypes types;

  std::size_t k_row_bytes() const { return kv_row_bytes(types.k, head_dim); }
  std::size_t v_row_bytes() const { return kv_row_bytes(types.v, head_dim); }
  // One head's K (or V) for all tokens of the block.
  std::size_t k_head_bytes() const { return static_cast<std::size_t>(block_size) * k_row_bytes(); }
  std::size_t v_head_bytes() const { return static_cast<std::size_t>(block_size) * v_row_bytes(); }
  // All heads' K (or V) of one layer.
  std::size_t k_layer_bytes() const { return static_cast<std::size_t>(n_kv_heads) * k_head_bytes(); }
  std::size_t v_layer_bytes() const { return static_cast<std::size_t>(n_kv_heads) * v_head_bytes(); }
  std::size_t layer_bytes() const { return k_layer_bytes() + v_layer_bytes(); }
  std::size_t block_bytes() const { return static_cast<std::size_t>(n_layers) * layer_bytes(); }

  std::size_t k_offset(int layer, int kv_head) const {
    return static_cast<std::size_t>(layer) * layer_bytes() + static_cast<std::size_t>(kv_head) * k_head_bytes();
  }
  std::size_t v_offset(int layer, int kv_head) const {
    return static_cast<std::size_t>(layer) * layer_bytes() + k_layer_bytes() +
           static_cast<std::size_t>(kv_head) * v_head_bytes();
  }
};

}  // namespace clm
