// ReusePlan: how one prompt will be assembled from what the cache holds,
// decided without side effects (DESIGN.md "Plan, then commit"). A plan names
// the exact prefix blocks to attach copy-free, the spans to copy from cached
// K/V with their position delta (reuse mode `shift`), and the token ranges
// the forward pass must compute. KvCacheManager::apply() carries it out or
// fails changing nothing; the scheduler then computes exactly plan.compute.
#pragma once

#include <cstdint>
#include <string_view>
#include <optional>
#include <vector>

#include "cache/block_key.h"
#include "cache/kv_pool.h"

namespace clm {

// What a request may reuse. Each mode includes the ones before it.
enum class ReuseMode : uint8_t {
  Off,     // compute every prompt token
  Prefix,  // attach blocks whose whole preceding context is identical (bitwise exact)
  Shift,   // also copy matching spans found anywhere, K re-rotated to the new positions (approximate)
  Blend,   // shift, then recompute the copied tokens whose K/V deviate most in the new context
};

std::string_view to_string(ReuseMode mode);
std::optional<ReuseMode> parse_reuse_mode(std::string_view text);

// Blend's share as flags and requests write it: a number in [0, 1], or
// "auto" for the adaptive choice.
struct BlendChoice {
  float ratio = 0.15f;
  bool adaptive = false;
};
std::optional<BlendChoice> parse_blend_ratio(std::string_view text);

// The granularity of what shift and blend reuse beyond the exact prefix.
// Lookups nest: the session's exact prefix first, then whole semantic
// blocks, then (for Token) any matching span in what is left.
enum class BlockStrategy : uint8_t {
  Token,     // any matching span of the same type
  Semantic,  // only whole semantic blocks, of at least min_block_length tokens, on both sides
  Session,   // only the exact prefix: nothing is copied from elsewhere
};

std::string_view to_string(BlockStrategy strategy);
std::optional<BlockStrategy> parse_block_strategy(std::string_view text);

struct ReuseOptions {
  ReuseMode mode = ReuseMode::Prefix;
  // Spans shorter than this are not reused (they cost more to find and
  // repair than they save).
  int min_reuse_tokens = 8;
  // Only the last `window` prompt tokens are searched for spans; 0 = all.
  int window = 0;
  // The first `lead` tokens of each shifted span are computed instead of
  // copied: they are where the span meets its new context, and where a
  // copied span deviates most from a fresh computation. A span of `lead`
  // tokens or fewer is computed whole. 48 is where the measured error on
  // the case sets of docs/QUALITY.md levels off while at least 90% of the
  // unchanged tokens are still reused.
  int lead = 48;
  // Blend: the share of copied tokens recomputed, most deviant first (the
  // deviation is measured at blend_layer after computing the layers before
  // it in the new context; engine/blend_selection.h).
  float blend_ratio = BlendChoice{}.ratio;
  // Blend: the layer whose V deviation picks the tokens (clamped below the
  // model's last layer). 2 rather than CacheBlend's 1: on docs/QUALITY.md's
  // reordered chunks it halves the error at the same share.
  int blend_layer = 2;
  // Blend: pick the share per prompt from the deviations instead (the
  // fewest tokens holding nearly all of the deviation, blend_ratio ignored).
  bool blend_adaptive = false;
  BlockStrategy block_strategy = BlockStrategy::Token;
  // Nothing at or after this prompt index is reused (attached, partly
  // copied or shifted): a request that scores its prompt needs the rows
  // from there on computed, since only a computed row yields logits.
  int32_t reuse_before = INT32_MAX;
};

// Where each prompt token's K/V came from, for one request. The four add up
// to the prompt's length.
struct ReuseCounts {
  int prefix = 0;      // attached (or copied) from an identical prefix, exact
  int shift = 0;       // copied from a span elsewhere, K re-rotated
  int recomputed = 0;  // found in the cache but computed anyway (span leads, blend's picks)
  int computed = 0;    // not found, computed
  int cached() const { return prefix + shift; }
  int total() const { return prefix + shift + recomputed + computed; }
};

// A run of source slots inside one cached block.
struct SpanPiece {
  BlockId block = kNoBlock;
  uint32_t generation = 0;  // the block's generation when planned; apply checks it
  int32_t offset = 0;       // first slot inside the block
  int32_t length = 0;
  int32_t src_pos = 0;      // position of the first source slot
};

// One matching span: prompt[dst_begin, dst_begin + length) equals the tokens
// of `pieces`, in order. Its first `lead` tokens are recomputed.
struct ReuseSpan {
  int32_t dst_begin = 0;
  int32_t length = 0;
  int32_t lead = 0;
  std::vector<SpanPiece> pieces;
};

struct PromptRange {
  int32_t begin = 0;
  int32_t end = 0;  // exclusive
};

struct ReusePlan {
  ReuseMode mode = ReuseMode::Prefix;
  // Exact prefix: whole shared blocks, then the leading tokens of a cached
  // block that continues the prompt only partly (copied).
  std::vector<BlockId> prefix_blocks;
  std::vector<BlockKey> prefix_keys;
  std::vector<uint32_t> prefix_generations;
  BlockId partial_source = kNoBlock;
  uint32_t partial_generation = 0;
  int32_t partial_tokens = 0;
  int32_t prefix_tokens = 0;  // whole blocks plus the partial copy
  // Spans, in prompt order, disjoint, all after prefix_tokens.
  std::vector<ReuseSpan> spans;
  // Prompt ranges to compute, in order; they and the copied spans tile
  // [prefix_tokens, prompt size). The last prompt token is always computed.
  std::vector<PromptRange> compute;

  ReuseCounts counts(int prompt_tokens) const;
  // The same plan reduced to its shared prefix blocks: nothing copied, so
  // it pins no source and needs the least room.
  ReusePlan shared_blocks_only(int prompt_tokens, int block_size) const;
};

}  // namespace clm
