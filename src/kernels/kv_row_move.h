// Moving cached token rows to another position, across every layer and KV
// head of a block: K re-rotated by the position change (rope_shift.h), V
// copied as is. The one place that does it for shift reuse (spans copied
// from other blocks), self-managed context (holes closed in place by
// `--evict-positions compact`) and the eviction evaluation's own arena.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kv_geometry.h"
#include "kernels/rope_shift.h"

namespace clm {

// n rows starting at src_row of src_block become rows dst_row.. of
// dst_block, rotated by table.delta. The same block and rows (in place) is
// allowed; other overlap is not. A delta of 0 copies bit for bit.
struct KvRowMove {
  const std::byte* src_block = nullptr;
  int32_t src_row = 0;
  std::byte* dst_block = nullptr;
  int32_t dst_row = 0;
  int32_t n = 0;
};

void move_kv_rows(const KvGeometry& g, const KvRowMove& move, const RopeShiftParams& rope,
                  const RopeShiftTable& table);

}  // namespace clm
