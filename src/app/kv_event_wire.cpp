#include "app/kv_event_wire.h"

#include <msgpack.hpp>

namespace clm {

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_hashes(Packer& p, const std::vector<BlockKey>& keys) {
  p.pack_array(static_cast<uint32_t>(keys.size()));
  for (BlockKey k : keys) p.pack_uint64(k);
}

void pack_string(Packer& p, const std::string& s) {
  p.pack_str(static_cast<uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

void pack_event(Packer& p, const KvEvent& e) {
  switch (e.kind) {
    case KvEventKind::Stored:
      p.pack_array(7);
      pack_string(p, "BlockStored");
      pack_hashes(p, e.keys);
      if (e.parent == kNoKey) p.pack_nil();
      else p.pack_uint64(e.parent);
      p.pack_array(static_cast<uint32_t>(e.tokens.size()));
      for (int32_t t : e.tokens) p.pack_int32(t);
      p.pack_int(e.block_size);
      p.pack_nil();  // lora_id: no adapters
      pack_string(p, e.medium);
      return;
    case KvEventKind::Removed:
      p.pack_array(3);
      pack_string(p, "BlockRemoved");
      pack_hashes(p, e.keys);
      pack_string(p, e.medium);
      return;
    case KvEventKind::Cleared:
      p.pack_array(1);
      pack_string(p, "AllBlocksCleared");
      return;
  }
}

}  // namespace

std::vector<KvEvent> join_kv_events(std::vector<KvEvent> events) {
  std::vector<KvEvent> out;
  out.reserve(events.size());
  for (KvEvent& e : events) {
    if (!out.empty()) {
      KvEvent& last = out.back();
      const bool same = last.kind == e.kind && last.medium == e.medium;
      if (same && e.kind == KvEventKind::Stored && last.block_size == e.block_size && e.keys.size() == 1 &&
          e.parent == last.keys.back()) {
        last.keys.push_back(e.keys.front());
        last.tokens.insert(last.tokens.end(), e.tokens.begin(), e.tokens.end());
        continue;
      }
      if (same && e.kind == KvEventKind::Removed) {
        last.keys.insert(last.keys.end(), e.keys.begin(), e.keys.end());
        continue;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string encode_kv_event_batch(std::span<const KvEvent> events, double ts, int data_parallel_rank) {
  msgpack::sbuffer buffer;
  Packer p(buffer);
  p.pack_array(3);
  p.pack_double(ts);
  p.pack_array(static_cast<uint32_t>(events.size()));
  for (const KvEvent& e : events) pack_event(p, e);
  p.pack_int(data_parallel_rank);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace clm
