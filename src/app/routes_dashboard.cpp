#include "app/routes_dashboard.h"

#include <chrono>
#include <filesystem>
#include <functional>
#include <system_error>

#include "app/dashboard_page.h"
#include "app/http_reply.h"
#include "app/http_routes.h"
#include "app/tier_report.h"

namespace clm {

namespace {

using nlohmann::json;

// The directory whose filesystem the disk tier's floor applies to.
std::filesystem::path disk_directory(const std::string& spec) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (spec.starts_with(kSqlite)) {
    std::filesystem::path file(spec.substr(kSqlite.size()));
    return file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  }
  return spec;
}

json disk_json(const DiskTierSettings& disk, const TierStats& tiers) {
  if (disk.spec.empty()) return nullptr;
  std::error_code ec;
  const std::filesystem::space_info space = std::filesystem::space(disk_directory(disk.spec), ec);
  return {{"spec", disk.spec},
          {"size_gb", static_cast<double>(tiers.disk_cache_bytes()) / 1e9},
          {"max_gb", disk.max_gb > 0 ? json(disk.max_gb) : json(nullptr)},
          {"min_free_gb", disk.min_free_gb},
          {"free_gb", ec ? json(nullptr) : json(static_cast<double>(space.available) / 1e9)}};
}

json sessions_json(ServerContext& ctx, const SchedulerStats& s) {
  return {{"remembered", ctx.sessions.size()},
          {"timeout_s", ctx.options.session_timeout_s},
          {"pinned_sessions", s.session_pins.sessions},
          {"pinned_blocks", s.session_pins.blocks},
          {"pins_expired", s.session_pins.expired},
          {"pins_released_for_room", s.session_pins.released_for_room}};
}

}  // namespace

double server_uptime_s(const ServerContext& ctx) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.started).count();
}

DashboardSample take_dashboard_sample(ServerContext& ctx) {
  return dashboard_sample(ctx.engine.cache_stats(), server_uptime_s(ctx));
}

json dashboard_json(ServerContext& ctx) {
  const EngineCacheStats stats = ctx.engine.cache_stats();
  DashboardHistory::Snapshot history = ctx.dashboard.snapshot();
  json requests = json::array();
  for (const auto& r : history.requests) requests.push_back(request_json(*r));
  json tiers = tiers_json(stats.tiers);
  tiers["disk"] = disk_json(ctx.options.disk, stats.tiers);
  return {{"interval_s", kDashboardSampleSeconds},
          {"max_samples", ctx.dashboard.limits().samples},
          {"max_requests", ctx.dashboard.limits().requests},
          {"tokens_shown", kDashboardTokensShown},
          {"now", sample_json(dashboard_sample(stats, server_uptime_s(ctx)))},
          {"series", samples_json(history.samples)},
          {"requests", std::move(requests)},
          {"tiers", std::move(tiers)},
          {"sessions", sessions_json(ctx, stats.scheduler)}};
}

void register_dashboard_routes(RouteTable& routes, ServerContext& ctx) {
  routes.get("/dashboard", [] { return html_response(dashboard_web_page()); });
  // Fifty maps and ten minutes of samples take a while to write: the
  // handler pool does it, not an I/O thread.
  routes.add(Route{"GET", "/dashboard/data", RouteThread::Handlers, /*json_body=*/false,
                   [&ctx](const HttpRequest&, std::function<void()>) {
                     RouteResult out;
                     reply_json(out.response, dashboard_json(ctx));
                     return out;
                   }});
}

}  // namespace clm
