// POST /v1/completions and POST /v1/chat/completions, answered whole or
// streamed as server-sent events.
#pragma once

#include <httplib.h>

#include "app/server_context.h"

namespace clm {

void register_generation_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace clm
