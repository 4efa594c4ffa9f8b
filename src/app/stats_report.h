// What GET /stats reports: the cache, scheduler, reuse settings, tiers and
// server figures as one JSON object. The HTTP route and the Python module's
// get_stats() both read it from here, so the two always agree.
#pragma once

#include <nlohmann/json.hpp>

#include "app/server_context.h"

namespace clm {

nlohmann::json server_stats_json(ServerContext& ctx);

}  // namespace clm
