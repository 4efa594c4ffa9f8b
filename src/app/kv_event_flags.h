// serve's KV event flags (--kv-events-endpoint, --kv-events-topic,
// --kv-events-replay-endpoint) and the rules between them.
#pragma once

#include <CLI/CLI.hpp>

#include "app/kv_event_publisher.h"
#include "util/error.h"

namespace clm {

void add_kv_event_flags(CLI::App& cmd, KvEventPublisherOptions& options);
// A topic or a replay endpoint without --kv-events-endpoint, or an
// endpoint that is not tcp:// or ipc://, is an error.
Status check_kv_event_flags(const KvEventPublisherOptions& options, bool topic_given);

}  // namespace clm
