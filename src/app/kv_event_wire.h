// vLLM's KV event wire format, as vLLM's `vllm/distributed/kv_events.py`
// publishes it and llm-d's kv-cache-manager reads it: an EventBatch is the
// msgpack array [ts, [events...], data_parallel_rank], and each event an
// array whose first element names its type:
//   ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
//    lora_id, medium]
//   ["BlockRemoved", block_hashes, medium]
//   ["AllBlocksCleared"]
// Hashes are unsigned 64-bit integers; a missing parent and lora_id are nil.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "cache/kv_event.h"

namespace clm {

// Consecutive blocks of one chain stored in one medium become one event (as
// vLLM reports a request's new blocks together), and consecutive removals
// from one medium one event: fewer, larger events saying the same.
std::vector<KvEvent> join_kv_events(std::vector<KvEvent> events);

// One batch, encoded; ts: seconds since the Unix epoch.
std::string encode_kv_event_batch(std::span<const KvEvent> events, double ts, int data_parallel_rank = 0);

}  // namespace clm
