// The read-only routes: the chat page at "/", GET /health, GET /v1/models,
// GET /stats (cache and scheduler figures as JSON) and GET /metrics
// (Prometheus text).
#pragma once

#include "app/server_context.h"

namespace clm {

class RouteTable;

void register_info_routes(RouteTable& routes, ServerContext& ctx);

}  // namespace clm
