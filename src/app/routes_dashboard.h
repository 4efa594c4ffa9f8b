// The dashboard: GET /dashboard (the page, public like "/") and
// GET /dashboard/data (what it polls, behind --api-key like /stats): the
// history kept in ServerContext::dashboard plus the figures of this moment.
#pragma once

#include <nlohmann/json.hpp>

#include "app/server_context.h"

namespace clm {

class RouteTable;

void register_dashboard_routes(RouteTable& routes, ServerContext& ctx);

// Seconds since the server started.
double server_uptime_s(const ServerContext& ctx);

// A sample of the /stats counters now, for the history's ring.
DashboardSample take_dashboard_sample(ServerContext& ctx);

// What GET /dashboard/data answers (README "Dashboard").
nlohmann::json dashboard_json(ServerContext& ctx);

}  // namespace clm
