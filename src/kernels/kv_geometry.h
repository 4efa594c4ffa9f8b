// Geometry of one physical KV block: K and V of every layer for block_size
// tokens. Inside a block the layout is [layer][K|V][kv_head][token][head_dim],
// so one head's keys for the block are contiguous (what attention streams).
#pragma once

#include <cstddef>
#include <cstdint>

namespace clm {

enum class KvType : uint8_t { F16, F32 };

struct KvGeometry {
  int n_layers = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int block_size = 32;
  KvType type = KvType::F16;

  std::size_t elem_bytes() const { return type == KvType::F16 ? 2 : 4; }
  // One head's K (or V) for all tokens of the block.
  std::size_t head_bytes() const {
    return static_cast<std::size_t>(block_size) * static_cast<std::size_t>(head_dim) * elem_bytes();
  }
  std::size_t layer_bytes() const { return 2 * static_cast<std::size_t>(n_kv_heads) * head_bytes(); }
  std::size_t block_bytes() const { return static_cast<std::size_t>(n_layers) * layer_bytes(); }

  std::size_t k_offset(int layer, int kv_head) const {
    return static_cast<std::size_t>(layer) * layer_bytes() + static_cast<std::size_t>(kv_head) * head_bytes();
  }
  std::size_t v_offset(int layer, int kv_head) const {
    return k_offset(layer, kv_head) + static_cast<std::size_t>(n_kv_heads) * head_bytes();
  }
};

}  // namespace clm
