// CacheDeps: what a KV cache manager is handed besides its settings: the
// model's RoPE, the threads and listeners it may use, and the clock and key
// function tests replace. None of it is owned; all of it outlives the manager.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "cache/block_key.h"
#include "cache/cache_observer.h"
#include "cache/kv_event.h"
#include "kernels/rope_shift.h"
#include "util/thread_pool.h"

namespace clm {

struct CacheDeps {
  // The model's RoPE, to re-rotate K of spans reused at another position
  // (head_dim 0: shifting is unavailable and plans never contain spans).
  // Derived from the model, never a user's choice.
  RopeShiftParams rope;
  // Copies of shifted spans are spread over these threads (null: the
  // caller's thread alone). Never used while a forward pass runs on them.
  ThreadPool* threads = nullptr;
  // The storage tiers below RAM (tier/tier_set.h), told of computed and
  // resident blocks; null: RAM only.
  CacheObserver* observer = nullptr;
  // Told of full exact blocks entering and leaving the RAM pool's prefix
  // index (medium "cpu"), and of the empty cache at construction, for
  // routers that track what each instance holds; null: nobody listens.
  KvEventSink* events = nullptr;
  // Seconds on a monotonic clock (empty: steady_clock); replaceable in tests.
  std::function<double()> clock;
  // Block identity (empty: block_key); replaceable in tests to force hash
  // collisions.
  std::function<BlockKey(BlockKey, std::span<const int32_t>, const KeyContext&)> key_function;
};

}  // namespace clm
