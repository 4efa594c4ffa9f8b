#include "app/routes_generation.h"

#include <memory>

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
  // With echo, the prompt comes first in the text and in the logprobs.
  std::vector<TokenLogprob> logprobs = job.request().echo ? job.prompt_logprobs() : std::vector<TokenLogprob>{};
  for (auto& lp : generated_) logprobs.push_back(std::move(lp));
  const std::optional<FinishDetails> details = job.finish_details();
  reply_json(res, completion_response(job.meta(), job.echo_text() + job.text(), job.finish_reason(), job.usage(),
                                      job.request().logprobs ? &logprobs : nullptr, details ? &*details : nullptr));
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

// The bytes of text a request brings to the tokenizer; refused above the
// limit before any is tokenized.
std::size_t prompt_bytes(const GenerationRequest& r) {
  std::size_t n = r.prompt.size();
  for (const ChatMessage& m : r.messages) n += m.content.size();
  return n;
}

// How many logprob entries (chosen token plus alternatives) the response
// can carry at most: each generated token, and with echo every prompt token.
std::size_t logprob_entries_bound(const GenerationRequest& r, int n_ctx) {
  if (!r.logprobs) return 0;
  const std::size_t tokens = static_cast<std::size_t>(r.max_tokens) + (r.echo ? static_cast<std::size_t>(n_ctx) : 0);
  return tokens * (1 + static_cast<std::size_t>(r.top_logprobs));
}

RouteResult handle(const HttpRequest& req, ServerContext& ctx, ApiEndpoint endpoint, std::function<void()> on_ready) {
  auto refuse = [](const ApiError& e) { return RouteResult{error_response(e), nullptr}; };
  auto body = parse_json_body(req.body);
  if (!body) return refuse(body.error());
  auto request = endpoint == ApiEndpoint::Chat ? parse_chat_request(*body, ctx.options.defaults)
                                               : parse_completion_request(*body, ctx.options.defaults);
  if (!request) return refuse(request.error());
  const std::string param = endpoint == ApiEndpoint::Chat ? "messages" : "prompt";
  const std::size_t max_prompt = ctx.options.limits.max_prompt_bytes;
  if (prompt_bytes(*request) > max_prompt)
    return refuse(invalid_field_error(param,
                                      "the prompt is " + std::to_string(prompt_bytes(*request)) +
                                          " bytes; this server takes at most " + std::to_string(max_prompt) +
                                          " (more than its context can hold)",
                                      "context_length_exceeded"));
  const std::size_t max_entries = ctx.options.limits.max_logprob_entries;
  if (logprob_entries_bound(*request, ctx.engine.options().n_ctx) > max_entries)
    return refuse(invalid_field_error("top_logprobs",
                                      "logprobs for this many tokens and alternatives could exceed " +
                                          std::to_string(max_entries) +
                                          " entries; ask for fewer max_tokens or top_logprobs",
                                      "logprobs_too_large"));
  auto job = GenerationJob::start(ctx, std::move(*request), std::move(on_ready));
  if (!job) return refuse(job.error());
  return RouteResult{{}, std::make_unique<GenerationReply>(std::move(*job))};
}

}  // namespace

void register_generation_routes(RouteTable& routes, ServerContext& ctx) {
  for (auto [path, endpoint] : {std::pair{"/v1/chat/completions", ApiEndpoint::Chat},
                                std::pair{"/v1/completions", ApiEndpoint::Completion}}) {
    routes.add(Route{"POST", path, /*heavy=*/true, /*json_body=*/true,
                     [&ctx, endpoint](const HttpRequest& req, std::function<void()> on_ready) {
                       return handle(req, ctx, endpoint, std::move(on_ready));
                     }});
  }
}

}  // namespace clm
