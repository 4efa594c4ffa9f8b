// The element types a KV cache row can be stored in, and the byte layout of
// one row (one token's K or V for one KV head, head_dim elements). K and V
// each have their own type (KvTypes). Adding a type is adding an enum value,
// its row layout here, its codec in kv_row_codec.cpp and its attention
// loaders (attn_kernels.h): everything else asks these functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clm {

// F16/F32: plain elements. Q8_0: int8 values in groups along head_dim, each
// group led by its f16 scale d (value = d * q), llama.cpp's block_q8_0 layout.
// Q4_0: 4-bit values q in [-8, 7] in groups along head_dim, each group led by
// its f16 scale d (value = d * q), two values to a byte (kv_row_codec.h).
// Fp8: one byte per value in OCP FP8 E4M3 (the "fn" variant: no infinities,
// largest 448), the row led by one power-of-two scale 2^e for the whole head
// (value = e4m3 * 2^e, kv_row_codec.h). One scale per row, not per group:
// the format's own exponent already follows each value's magnitude over 17
// binades, so a finer scale would only move where 448 lands, and a scale a
// row keeps a token's bytes its own, as the grouped types' do.
enum class KvType : uint8_t { F16, F32, Q8_0, Q4_0, Fp8 };
inline constexpr int kKvTypeCount = 5;

// Elements per q8_0 group. A group never spans two tokens: a token's bytes
// depend on its own values only, so appending a token one decode step at a
// time writes what a prefill of the whole block writes, and a cache hit
// holds the bytes a cold run would. Heads narrower than a group (the small
// test models have head_dim 8) take the whole head as one group, which
// costs one 2-byte scale per head_dim values; wider heads must split into
// whole groups (kv_type_unsupported).
inline constexpr int kQ8GroupSize = 32;
// Elements per q4_0 group, by the same rule (and for the same reason) as
// q8_0's; a group's values fill whole bytes, so a head must be even.
inline constexpr int kQ4GroupSize = 32;

std::string_view kv_type_name(KvType t);  // "f16", "f32", "q8_0", "q4_0", "fp8": the flags' spelling
std::optional<KvType> parse_kv_type(std::string_view name);
// Stored as something other than plain f16/f32 elements: moving such a row
// (a RoPE shift) goes through f32, and the tiers store its bytes raw.
inline bool is_quantized(KvType t) { return t == KvType::Q8_0 || t == KvType::Q4_0 || t == KvType::Fp8; }

// Elements of one q8_0 group for this head width: the whole head when it is
// narrower than kQ8GroupSize.
inline int q8_group_size(int head_dim) { return head_dim < kQ8GroupSize ? head_dim : kQ8GroupSize; }
inline int q4_group_size(int head_dim) { return head_dim < kQ4GroupSize ? head_dim : kQ4GroupSize; }

// Bytes of one row of head_dim elements of type t.
inline std::size_t kv_row_bytes(KvType t, int head_dim) {
  const auto hd = static_cast<std::size_t>(head_dim);
  switch (t) {
    case KvType::F16: return 2 * hd;
    case KvType::F32: return 4 * hd;
    case KvType::Q8_0: return hd + 2 * (hd / static_cast<std::size_t>(q8_group_size(head_dim)));
    case KvType::Q4_0: return hd / 2 + 2 * (hd / static_cast<std::size_t>(q4_group_size(head_dim)));
    case KvType::Fp8: return 1 + hd;
  }
  return 0;
}

// Why a head of head_dim elements cannot be stored as t, or empty when it can.
std::string kv_type_unsupported(KvType t, int head_dim);

// The types of K and of V. One KvType converts to both, which is what most
// callers mean ("an f16 cache").
struct KvTypes {
  KvType k = KvType::F16;
  KvType v = KvType::F16;
  constexpr KvTypes() = default;
  constexpr KvTypes(KvType both) : k(both), v(both) {}  // NOLINT: one type for K and V is the common case
  constexpr KvTypes(KvType k_type, KvType v_type) : k(k_type), v(v_type) {}
  friend constexpr bool operator==(const KvTypes&, const KvTypes&) = default;
};

// "f16" when K and V share a type, else "k=q8_0,v=f16": for logs and reports.
std::string kv_types_text(KvTypes t);

}  // namespace clm
