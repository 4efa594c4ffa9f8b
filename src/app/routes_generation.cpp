#include "app/routes_generation.h"

#include <memory>

#include "app/api_key.h"
#include "app/generation_api.h"
#include "app/http_reply.h"
#include "app/http_routes.h"
#include "app/openai_response.h"
#include "app/sse.h"

namespace clm {

GenerationReply::GenerationReply(std::unique_ptr<GenerationJob> job) : job_(std::move(job)) {}

std::optional<HttpResponse> GenerationReply::pump_whole() {
  GenerationJob& job = *job_;
  while (!job.done()) {
    std::optional<GenerationJob::Step> step = job.poll();
    if (!step) return std::nullopt;
    for (auto& lp : step->logprobs) generated_.push_back(std::move(lp));
  }
  HttpResponse res;
  if (job.error()) {
    reply_error(res, *job.error());
    return res;
  }
  reply_json(res, finished_response(job, std::move(generated_)));
  return res;
}

// One event per token that releases text (or carries logprobs).
bool GenerationReply::pump_events(std::string& out) {
  GenerationJob& job = *job_;
  const ResponseMeta& meta = job.meta();
  const bool with_logprobs = job.request().logprobs;
  if (!sent_first_) {
    sent_first_ = true;
    // Chat streams open with the role; completions start with text.
    if (meta.endpoint == ApiEndpoint::Chat) {
      StreamChunk first;
      first.first = true;
      out += sse_event(stream_chunk(meta, first));
    }
  }
  while (!job.done()) {
    std::optional<GenerationJob::Step> step = job.poll();
    if (!step) return false;
    if (!step->text.empty() || (with_logprobs && !step->logprobs.empty())) {
      StreamChunk chunk;
      chunk.text = step->text;
      chunk.text_offset = step->text_offset;
      if (with_logprobs) chunk.logprobs = &step->logprobs;
      out += sse_event(stream_chunk(meta, chunk));
    }
  }
  if (job.error()) {
    out += sse_event(job.error()->to_json());
  } else {
    StreamChunk last;
    last.finish_reason = job.finish_reason();
    last.finish_details = job.finish_details();
    out += sse_event(stream_chunk(meta, last));
    if (job.request().include_usage) out += sse_event(usage_chunk(meta, job.usage()));
  }
  out += sse_done();
  return true;
}

namespace {

RouteResult handle(const HttpRequest& req, ServerContext& ctx, ApiEndpoint endpoint, std::function<void()> on_ready) {
  auto refuse = [](const ApiError& e) { return RouteResult{error_response(e), nullptr}; };
  auto body = parse_json_body(req.body);
  if (!body) return refuse(body.error());
  const std::string_view key_scope =
      ctx.options.namespace_per_api_key ? bearer_token(req.header("Authorization")) : std::string_view();
  auto job = start_generation(ctx, endpoint, *body, std::move(on_ready), key_scope);
  if (!job) return refuse(job.error());
  return RouteResult{{}, std::make_unique<GenerationReply>(std::move(*job))};
}

}  // namespace

void register_generation_routes(RouteTable& routes, ServerContext& ctx) {
  for (auto [path, endpoint] : {std::pair{"/v1/chat/completions", ApiEndpoint::Chat},
                                std::pair{"/v1/completions", ApiEndpoint::Completion}}) {
    const RouteThread thread = endpoint == ApiEndpoint::Chat ? RouteThread::Renderers : RouteThread::Handlers;
    routes.add(Route{"POST", path, thread, /*json_body=*/true,
                     [&ctx, endpoint](const HttpRequest& req, std::function<void()> on_ready) {
                       return handle(req, ctx, endpoint, std::move(on_ready));
                     }});
  }
}

}  // namespace clm
