// Why a request ended before it finished on its own: who cancelled it, or
// that it was preempted. The scheduler counts each cause once per request
// and reports it in the request's summary, so that stats and responses can
// tell a client that left from a server shutting down or a full KV cache.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace clm {

enum class CancelCause : uint8_t {
  Client,      // the requester stopped it: its client went away, or its token callback said stop
  StopString,  // the requester found a stop string in the text
  Shutdown,    // the scheduler was stopped with the request queued or running
  Deadline,    // the requester's time limit ran out
};
inline constexpr std::size_t kCancelCauses = 4;

enum class PreemptCause : uint8_t {
  KvCacheFull,  // a running sequence needed a KV block and none could be had
};
inline constexpr std::size_t kPreemptCauses = 1;

// "client_gone", "stop_string", "shutdown", "deadline": the label in /stats
// and /metrics.
std::string_view to_string(CancelCause cause);
// "kv_cache_full".
std::string_view to_string(PreemptCause cause);

// Counters indexed by cause.
using CancelCounts = std::array<uint64_t, kCancelCauses>;
using PreemptCounts = std::array<uint64_t, kPreemptCauses>;

}  // namespace clm
