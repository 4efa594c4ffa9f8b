#include "kernels/kv_row_move.h"

#include <cstring>

namespace clm {

void move_kv_rows(const KvGeometry& g, const KvRowMove& m, const RopeShiftParams& rope, const RopeShiftTable& table) {
  const std::size_t hd = static_cast<std::size_t>(g.head_dim);
  const std::size_t row = hd * g.elem_bytes();
  const std::size_t bytes = static_cast<std::size_t>(m.n) * row;
  const std::size_t src_at = static_cast<std::size_t>(m.src_row) * row;
  const std::size_t dst_at = static_cast<std::size_t>(m.dst_row) * row;
  const bool in_place = m.src_block == m.dst_block && m.src_row == m.dst_row;
  if (in_place && table.delta == 0) return;
  for (int layer = 0; layer < g.n_layers; ++layer)
    for (int h = 0; h < g.n_kv_heads; ++h) {
      const std::byte* sk = m.src_block + g.k_offset(layer, h) + src_at;
      std::byte* dk = m.dst_block + g.k_offset(layer, h) + dst_at;
      if (table.delta == 0)
        std::memcpy(dk, sk, bytes);
      else
        rope_shift_rows(sk, dk, g.type, m.n, hd, rope, table);
      if (!in_place) std::memcpy(m.dst_block + g.v_offset(layer, h) + dst_at, m.src_block + g.v_offset(layer, h) + src_at, bytes);
    }
}

}  // namespace clm
