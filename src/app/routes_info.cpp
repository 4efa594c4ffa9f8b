#include "app/routes_info.h"

#include "app/http_reply.h"
#include "app/http_routes.h"
#include "app/stats_report.h"
#include "app/web_page.h"

namespace clm {

using nlohmann::json;

void register_info_routes(RouteTable& routes, ServerContext& ctx) {
  routes.get("/", [] { return html_response(chat_web_page()); });
  routes.get("/health", [&ctx] {
    HttpResponse res;
    if (ctx.leaving) reply_json(res, {{"status", "shutting_down"}}, 503);
    else reply_json(res, {{"status", "ok"}});
    return res;
  });
  routes.get("/v1/models", [&ctx] {
    const ModelConfig& config = ctx.engine.model().config();
    json model = {{"id", ctx.options.defaults.model_id},
                  {"object", "model"},
                  {"created", ctx.created_unix_s},
                  {"owned_by", "clmcache"},
                  {"meta",
                   {{"n_ctx", ctx.engine.options().scheduler.n_ctx},
                    {"n_vocab", ctx.engine.model().tokenizer().n_vocab()},
                    {"n_layer", config.n_layers},
                    {"chat_format", std::string(ctx.chat.name())}}}};
    HttpResponse res;
    reply_json(res, {{"object", "list"}, {"data", json::array({model})}});
    return res;
  });
  routes.get("/stats", [&ctx] {
    HttpResponse res;
    reply_json(res, server_stats_json(ctx));
    return res;
  });
  routes.get("/metrics", [&ctx] {
    const EngineCacheStats stats = ctx.engine.cache_stats();
    ctx.metrics.update_cache(stats.cache);
    ctx.metrics.update_scheduler(stats.scheduler);
    ctx.metrics.update_tiers(stats.tiers);
    HttpResponse res;
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = ctx.metrics.render();
    return res;
  });
}

}  // namespace clm
