#include "app/kv_event_flags.h"

namespace clm {

namespace {

bool zmq_transport(const std::string& endpoint) {
  return endpoint.starts_with("tcp://") || endpoint.starts_with("ipc://");
}

}  // namespace

void add_kv_event_flags(CLI::App& cmd, KvEventPublisherOptions& options) {
  cmd.add_option("--kv-events-endpoint", options.endpoint,
                 "publish KV events in vLLM's format on a ZeroMQ PUB socket bound here (tcp://HOST:PORT, PORT * "
                 "for any free one; ipc://PATH)");
  cmd.add_option("--kv-events-topic", options.topic, "the topic frame of every KV event message")
      ->default_str(options.topic);
  cmd.add_option("--kv-events-replay-endpoint", options.replay_endpoint,
                 "a ZeroMQ ROUTER socket bound here replays kept KV event batches from a sequence number");
  cmd.add_option("--kv-events-replay-batches", options.replay_batches, "KV event batches kept for replay")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->default_str(std::to_string(options.replay_batches));
  cmd.add_option("--kv-events-block-hash", options.block_hash,
                 "block hashes in the events: 'clmcache' (its own keys) or 'vllm' (vLLM's sha256_cbor hashes, "
                 "which a router can compute from a prompt; needs --kv-events-hash-seed)")
      ->check(CLI::IsMember({"clmcache", "vllm"}))
      ->default_str(options.block_hash);
  cmd.add_option("--kv-events-hash-seed", options.vllm_hash_seed,
                 "the seed of vLLM's block hashes: the PYTHONHASHSEED the router (and vLLM) use");
  cmd.add_option("--kv-events-queue", options.max_queued_events,
                 "KV events waiting to be sent at most; beyond it events are dropped (and counted)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->default_str(std::to_string(options.max_queued_events));
}

Status check_kv_event_flags(const KvEventPublisherOptions& options, bool topic_given) {
  if (options.block_hash == "vllm" && options.vllm_hash_seed.empty())
    return fail("--kv-events-block-hash vllm needs --kv-events-hash-seed (the router's PYTHONHASHSEED)");
  if (options.block_hash != "vllm" && !options.vllm_hash_seed.empty())
    return fail("--kv-events-hash-seed is for --kv-events-block-hash vllm");
  if (options.endpoint.empty()) {
    if (!options.replay_endpoint.empty()) return fail("--kv-events-replay-endpoint needs --kv-events-endpoint");
    if (topic_given) return fail("--kv-events-topic needs --kv-events-endpoint");
    return {};
  }
  if (!zmq_transport(options.endpoint))
    return fail("--kv-events-endpoint '" + options.endpoint + "': expected tcp://HOST:PORT or ipc://PATH");
  if (!options.replay_endpoint.empty() && !zmq_transport(options.replay_endpoint))
    return fail("--kv-events-replay-endpoint '" + options.replay_endpoint +
                "': expected tcp://HOST:PORT or ipc://PATH");
  return {};
}

}  // namespace clm
