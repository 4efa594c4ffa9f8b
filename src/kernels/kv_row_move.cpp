#include "kernels/kv_row_move.h"

#include <cstring>
#include <vector>

#include "kernels/kv_row_codec.h"

namespace clm {

namespace {

// K rows re-rotated in their stored type. Float rows rotate in place of
// their elements (rope_shift_rows); a quantized row has no elements to
// rotate, so it is read as f32, rotated as f32 rows are, and quantized
// again: one more rounding per element (up to half a quantization step of
// its group), which is the accuracy a shift of q8_0 K costs.
void rotate_k_rows(KvType type, const std::byte* src, std::byte* dst, int n_rows, int head_dim,
                   const RopeShiftParams& rope, const RopeShiftTable& table) {
  if (!is_quantized(type))
    return rope_shift_rows(src, dst, type, n_rows, static_cast<std::size_t>(head_dim), rope, table);
  // Per thread, sized once: moves run on the worker threads, in decode too.
  static thread_local std::vector<float> row;
  row.resize(static_cast<std::size_t>(head_dim));
  const std::size_t bytes = kv_row_bytes(type, head_dim);
  for (int r = 0; r < n_rows; ++r) {
    const std::size_t at = static_cast<std::size_t>(r) * bytes;
    decode_kv_row(type, src + at, head_dim, row.data());
    rope_shift_rows(reinterpret_cast<const std::byte*>(row.data()), reinterpret_cast<std::byte*>(row.data()),
                    KvType::F32, 1, static_cast<std::size_t>(head_dim), rope, table);
    encode_kv_row(type, row.data(), head_dim, dst + at);
  }
}

}  // namespace

void move_kv_rows(const KvGeometry& g, const KvRowMove& m, const RopeShiftParams& rope, const RopeShiftTable& table) {
  const std::size_t k_row = g.k_row_bytes(), v_row = g.v_row_bytes();
  const std::size_t n = static_cast<std::size_t>(m.n);
  const std::size_t src_row = static_cast<std::size_t>(m.src_row), dst_row = static_cast<std::size_t>(m.dst_row);
  const bool in_place = m.src_block == m.dst_block && m.src_row == m.dst_row;
  if (in_place && table.delta == 0) return;
  for (int layer = 0; layer < g.n_layers; ++layer)
    for (int h = 0; h < g.n_kv_heads; ++h) {
      const std::byte* sk = m.src_block + g.k_offset(layer, h) + src_row * k_row;
      std::byte* dk = m.dst_block + g.k_offset(layer, h) + dst_row * k_row;
      if (table.delta == 0)
        std::memcpy(dk, sk, n * k_row);
      else
        rotate_k_rows(g.types.k, sk, dk, m.n, g.head_dim, rope, table);
      if (!in_place)
        std::memcpy(m.dst_block + g.v_offset(layer, h) + dst_row * v_row,
                    m.src_block + g.v_offset(layer, h) + src_row * v_row, n * v_row);
    }
}

}  // namespace clm
