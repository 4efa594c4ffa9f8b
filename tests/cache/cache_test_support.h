// A KvCacheManager over a tiny pool with a fake clock, for tests that run
// without a model. Appending a token "computes" its K/V by stamping the slot
// with the token, its position, the namespace and a hash of the whole prefix
// up to it, which is what real K/V depends on. A slot whose stamp disagrees
// with its sequence's tokens shows a write into a shared block, a false
// prefix hit or a cached block reused before it was dropped.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "cache/kv_pool.h"
#include "util/check.h"

namespace clm::testing_support {

constexpr int kBlockSize = 4;
constexpr uint64_t kFingerprint = 0xC0FFEE;

inline KvGeometry tiny_geometry() {
  KvGeometry g;
  g.n_layers = 1;
  g.n_kv_heads = 1;
  g.head_dim = 4;  // four f32 per slot: exactly one SlotStamp
  g.block_size = kBlockSize;
  g.types = KvType::F32;
  return g;
}

struct SlotStamp {
  uint32_t token = 0;
  uint32_t pos = 0;
  uint32_t prefix = 0;
  uint32_t cache_namespace = 0;
  bool operator==(const SlotStamp&) const = default;
};
static_assert(sizeof(SlotStamp) == 4 * sizeof(float));

// Tokens 0..n-1 of `prompt` starting at `first`: first, first+1, ...
inline std::vector<int32_t> iota_tokens(int32_t first, int n) {
  std::vector<int32_t> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = first + i;
  return v;
}

// Most manager tests are about the whole-block index; partial-block reuse
// (which copies into a fresh block inside begin) has tests of its own.
inline CacheOptions whole_blocks_only() {
  CacheOptions o;
  o.partial_block_reuse = false;
  return o;
}

// Spans can be shifted: a RoPE that rotates nothing (n_rot 0), so a copied
// slot keeps the stamp of the place it was computed at, which is what shows
// a shifted slot handed out where an exact one was promised.
inline CacheDeps shifting() {
  CacheDeps d;
  d.rope.head_dim = tiny_geometry().head_dim;
  d.rope.n_rot = 0;
  return d;
}

inline ReuseOptions shift_options(int min_reuse_tokens = 4, int lead = 0) {
  ReuseOptions r;
  r.mode = ReuseMode::Shift;
  r.min_reuse_tokens = min_reuse_tokens;
  r.lead = lead;
  return r;
}

class CacheHarness {
 public:
  explicit CacheHarness(std::size_t n_blocks, CacheOptions options = whole_blocks_only(), CacheDeps deps = {}) {
    auto pool = KvPool::create(tiny_geometry(), n_blocks);
    CLM_CHECK(pool.has_value(), "test pool");
    pool_ = std::move(*pool);
    if (!deps.clock) deps.clock = [this] { return now; };
    manager_ = std::make_unique<KvCacheManager>(*pool_, kFingerprint, options, std::move(deps));
  }
  CacheHarness(const CacheHarness&) = delete;
  CacheHarness& operator=(const CacheHarness&) = delete;

  double now = 0.0;  // the fake clock, unless deps.clock was given

  KvPool& pool() { return *pool_; }
  KvCacheManager& cache() { return *manager_; }

  static SlotStamp expected_stamp(std::span<const int32_t> tokens, std::size_t slot, uint64_t cache_namespace) {
    uint32_t h = 2166136261u ^ static_cast<uint32_t>(cache_namespace * 0x9E3779B9u);
    for (std::size_t i = 0; i <= slot; ++i) h = (h ^ static_cast<uint32_t>(tokens[i])) * 16777619u;
    return {static_cast<uint32_t>(tokens[slot]), static_cast<uint32_t>(slot), h,
            static_cast<uint32_t>(cache_namespace)};
  }

  std::byte* slot_address(const CachedSequence& seq, int slot) const {
    const BlockId id = seq.table.blocks().at(static_cast<std::size_t>(slot / kBlockSize));
    const std::size_t offset = tiny_geometry().k_offset(0, 0) +
                               static_cast<std::size_t>(slot % kBlockSize) * sizeof(SlotStamp);
    return pool_->block_data(id) + offset;
  }

  SlotStamp read_slot(const CachedSequence& seq, int slot) const {
    SlotStamp s;
    std::memcpy(&s, slot_address(seq, slot), sizeof s);
    return s;
  }

  // Appends tokens (room must be reserved) at consecutive positions and
  // writes their K/V, as a forward pass would.
  void append(CachedSequence& seq, std::span<const int32_t> tokens) {
    for (int32_t token : tokens) {
      const int32_t slot = manager_->append(seq, token);
      const SlotStamp s = expected_stamp(seq.table.tokens(), static_cast<std::size_t>(slot), seq.context.cache_namespace);
      std::memcpy(slot_address(seq, slot), &s, sizeof s);
    }
  }

  // begin + reserve + append + commit. Returns the tokens attached, or -1 if
  // the reserve failed (the sequence is then begun but not extended).
  int run(CachedSequence& seq, std::span<const int32_t> prompt, uint64_t cache_namespace = 0) {
    const int attached = manager_->begin(seq, prompt, cache_namespace);
    if (!manager_->reserve(seq, static_cast<int>(prompt.size()) - attached)) return -1;
    append(seq, prompt.subspan(static_cast<std::size_t>(attached)));
    manager_->commit(seq);
    return attached;
  }

  // plan + apply + "compute" the plan's ranges + commit, with room for the
  // prompt alone. Returns the plan, or nullopt if apply refused it (then
  // `seq` is untouched).
  std::optional<ReusePlan> run_plan(CachedSequence& seq, std::span<const int32_t> prompt, const ReuseOptions& options,
                                    uint64_t cache_namespace = 0) {
    ReusePlan plan = manager_->plan(prompt, cache_namespace, options);
    if (manager_->apply(seq, plan, prompt, cache_namespace, static_cast<int>(prompt.size())) != ApplyStatus::Ok)
      return std::nullopt;
    for (const PromptRange& r : plan.compute)
      for (int32_t pos = r.begin; pos < r.end; ++pos) {
        int32_t slot = pos;
        if (pos < seq.table.n_slots())
          manager_->fill(seq, slot, pos);
        else
          slot = manager_->append(seq, prompt[static_cast<std::size_t>(pos)]);
        const SlotStamp st = expected_stamp(seq.table.tokens(), static_cast<std::size_t>(slot), seq.context.cache_namespace);
        std::memcpy(slot_address(seq, slot), &st, sizeof st);
      }
    manager_->commit(seq);
    return plan;
  }

  // Every slot of `seq` holds the K/V its own tokens would produce.
  ::testing::AssertionResult slots_intact(const CachedSequence& seq) const {
    const auto& tokens = seq.table.tokens();
    for (int s = 0; s < seq.table.n_slots(); ++s) {
      const SlotStamp want = expected_stamp(tokens, static_cast<std::size_t>(s), seq.context.cache_namespace);
      const SlotStamp got = read_slot(seq, s);
      if (!(got == want))
        return ::testing::AssertionFailure()
               << "slot " << s << " of block " << seq.table.blocks()[static_cast<std::size_t>(s / kBlockSize)]
               << " holds token " << got.token << " pos " << got.pos << " prefix " << got.prefix << " ns "
               << got.cache_namespace << ", expected token " << want.token << " pos " << want.pos << " prefix "
               << want.prefix << " ns " << want.cache_namespace;
    }
    return ::testing::AssertionSuccess();
  }

 private:
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<KvCacheManager> manager_;
};

}  // namespace clm::testing_support
