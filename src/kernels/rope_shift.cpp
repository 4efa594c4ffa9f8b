// The table, the scalar reference and the dispatch of rope_shift.h.
#include "kernels/rope_shift.h"

#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu_features.h"
#include "kernels/element_read.h"
#include "kernels/rope_shift_paths.h"
#include "util/half.h"

namespace clm {

namespace {

std::size_t elem_bytes(KvType type) { return type == KvType::F16 ? 2 : 4; }

void check_args(KvType type, const RopeShiftParams& params, const RopeShiftTable& table) {
  assert(!is_quantized(type));  // kv_row_move rotates those through f32
  (void)type;
  assert(params.n_rot >= 0 && params.n_rot % 2 == 0 && params.n_rot <= params.head_dim);
  assert(table.cos.size() == static_cast<std::size_t>(params.n_rot / 2) && table.sin.size() == table.cos.size());
  (void)params;
  (void)table;
}

// Rows copied whole: the shift by 0. Copying instead of rotating by (1, 0)
// keeps what arithmetic would not: a -0 whose partner is negative
// (-0 + +0 is +0), an element whose partner is infinite (inf * 0 is NaN),
// NaN payloads.
void copy_rows(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
               int head_dim) {
  if (src == dst) return;
  const std::size_t eb = elem_bytes(type);
  for (int r = 0; r < n_rows; ++r) {
    const std::size_t off = static_cast<std::size_t>(r) * stride_elems * eb;
    std::memcpy(dst + off, src + off, static_cast<std::size_t>(head_dim) * eb);
  }
}

// The elements past n_rot carry no position.
void copy_unrotated(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                    const RopeShiftParams& params) {
  if (src == dst || params.n_rot == params.head_dim) return;
  const std::size_t eb = elem_bytes(type);
  const std::size_t from = static_cast<std::size_t>(params.n_rot) * eb;
  const std::size_t n = static_cast<std::size_t>(params.head_dim - params.n_rot) * eb;
  for (int r = 0; r < n_rows; ++r) {
    const std::size_t off = static_cast<std::size_t>(r) * stride_elems * eb + from;
    std::memcpy(dst + off, src + off, n);
  }
}

struct F32Elem {
  static constexpr std::size_t kBytes = 4;
  static float load(const std::byte* p) { return read_f32_element(p); }
  static void store(std::byte* p, float v) { std::memcpy(p, &v, 4); }
};
struct F16Elem {
  static constexpr std::size_t kBytes = 2;
  static float load(const std::byte* p) { return read_f16_element(p); }
  static void store(std::byte* p, float v) {
    const uint16_t h = f32_to_f16(v);
    std::memcpy(p, &h, 2);
  }
};

// rope_shift_paths.h's expression, pair by pair. Both elements of a pair are
// read before either is written, so src == dst is safe.
template <class E>
void rotate_scalar(const std::byte* src, std::byte* dst, int n_rows, std::size_t stride_elems,
                   const RopeShiftParams& params, const RopeShiftTable& table) {
  const std::size_t half = static_cast<std::size_t>(params.n_rot / 2);
  for (int r = 0; r < n_rows; ++r) {
    const std::size_t off = static_cast<std::size_t>(r) * stride_elems * E::kBytes;
    const std::byte* s = src + off;
    std::byte* d = dst + off;
    for (std::size_t i = 0; i < half; ++i) {
      const std::size_t ia = params.neox ? i : 2 * i;
      const std::size_t ib = params.neox ? i + half : 2 * i + 1;
      const float x0 = E::load(s + ia * E::kBytes);
      const float x1 = E::load(s + ib * E::kBytes);
      const float c = table.cos[i];
      const float sn = table.sin[i];
      const float y0 = std::fma(x0, c, x1 * -sn);
      const float y1 = std::fma(x1, c, x0 * sn);
      E::store(d + ia * E::kBytes, y0);
      E::store(d + ib * E::kBytes, y1);
    }
  }
}

void rotate_scalar_rows(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                        const RopeShiftParams& params, const RopeShiftTable& table) {
  if (type == KvType::F16)
    rotate_scalar<F16Elem>(src, dst, n_rows, stride_elems, params, table);
  else
    rotate_scalar<F32Elem>(src, dst, n_rows, stride_elems, params, table);
}

}  // namespace

RopeShiftTable make_rope_shift_table(const RopeShiftParams& params, int32_t delta) {
  assert(params.n_rot >= 0 && params.n_rot % 2 == 0);
  const int half = params.n_rot / 2;
  RopeShiftTable t;
  t.delta = delta;
  t.cos.resize(static_cast<std::size_t>(half));
  t.sin.resize(static_cast<std::size_t>(half));
  const double base = static_cast<double>(params.freq_base);
  for (int i = 0; i < half; ++i) {
    double theta = std::pow(base, -2.0 * i / static_cast<double>(params.n_rot));
    if (params.freq_factors) theta /= static_cast<double>(params.freq_factors[i]);
    // delta 0 gives the angle +0: cos 1 and sin 0 exactly.
    const double angle = static_cast<double>(delta) * theta;
    t.cos[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(angle));
    t.sin[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(angle));
  }
  return t;
}

void rope_shift_rows_scalar(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                            const RopeShiftParams& params, const RopeShiftTable& table) {
  check_args(type, params, table);
  if (table.delta == 0) return copy_rows(src, dst, type, n_rows, stride_elems, params.head_dim);
  rotate_scalar_rows(src, dst, type, n_rows, stride_elems, params, table);
  copy_unrotated(src, dst, type, n_rows, stride_elems, params);
}

void rope_shift_rows(const std::byte* src, std::byte* dst, KvType type, int n_rows, std::size_t stride_elems,
                     const RopeShiftParams& params, const RopeShiftTable& table) {
  check_args(type, params, table);
  if (table.delta == 0) return copy_rows(src, dst, type, n_rows, stride_elems, params.head_dim);
  switch (active_kernel_path()) {
#if CLM_ARCH_X86_64
    case KernelPath::Avx2: rope_shift_rotate_avx2(src, dst, type, n_rows, stride_elems, params, table); break;
    case KernelPath::Avx512:
    case KernelPath::Avx512Vnni:
      rope_shift_rotate_avx512(src, dst, type, n_rows, stride_elems, params, table);
      break;
#endif
#if CLM_ARCH_AARCH64
    case KernelPath::Neon:
    case KernelPath::NeonDot: rope_shift_rotate_neon(src, dst, type, n_rows, stride_elems, params, table); break;
#endif
    default:  // Scalar, and the paths of the other architecture
      rotate_scalar_rows(src, dst, type, n_rows, stride_elems, params, table);
      break;
  }
  copy_unrotated(src, dst, type, n_rows, stride_elems, params);
}

}  // namespace clm
