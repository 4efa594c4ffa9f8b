// KvEvent: what a cache-aware router needs to know about this instance's
// blocks, in the shape of vLLM's KV events: full exact blocks stored in a
// medium (the RAM pool, a tier below it), removed from one, or everything
// forgotten. The cache manager and the tiers emit them; a KvEventSink
// (the server's publisher) carries them off. Block identity is the prefix
// index's own key (cache/block_key.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cache/block_key.h"

namespace clm {

enum class KvEventKind { Stored, Removed, Cleared };

// The RAM pool's medium name; tiers use their own name() ("disk", "redis").
inline constexpr const char* kRamMedium = "cpu";

struct KvEvent {
  KvEventKind kind = KvEventKind::Stored;
  std::string medium;           // empty for Cleared
  std::vector<BlockKey> keys;   // Stored, Removed: parent first when a chain
  BlockKey parent = kNoKey;     // Stored: the parent of keys.front(); kNoKey: none
  std::vector<int32_t> tokens;  // Stored: the token ids of every block, in order
  int block_size = 0;           // Stored: tokens per block
};

inline KvEvent stored_event(std::string medium, BlockKey key, BlockKey parent, std::vector<int32_t> tokens) {
  KvEvent e;
  e.kind = KvEventKind::Stored;
  e.medium = std::move(medium);
  e.keys = {key};
  e.parent = parent;
  e.block_size = static_cast<int>(tokens.size());
  e.tokens = std::move(tokens);
  return e;
}

inline KvEvent removed_event(std::string medium, std::vector<BlockKey> keys) {
  KvEvent e;
  e.kind = KvEventKind::Removed;
  e.medium = std::move(medium);
  e.keys = std::move(keys);
  return e;
}

inline KvEvent cleared_event() {
  KvEvent e;
  e.kind = KvEventKind::Cleared;
  return e;
}

class KvEventSink {
 public:
  virtual ~KvEventSink() = default;
  // Thread-safe and never blocks: called on the scheduler's thread and the
  // tiers' threads, under their locks. A sink that cannot keep up drops the
  // event (and counts it) rather than wait.
  virtual void publish(KvEvent event) = 0;
};

}  // namespace clm
