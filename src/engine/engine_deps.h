// EngineDeps: what an engine is handed besides its options: listeners that
// the caller owns and that outlive the engine.
#pragma once

#include "cache/kv_event.h"

namespace clm {

struct EngineDeps {
  // Told of the blocks the RAM pool and the tiers store and drop (KV events
  // for cache-aware routers); null: nobody listens.
  KvEventSink* kv_events = nullptr;
};

}  // namespace clm
