#include "app/generation_api.h"

#include <string>

#include "app/cache_namespace.h"

namespace clm {

namespace {

// The bytes of text a request brings to the tokenizer; refused above the
// limit before any is tokenized.
std::size_t prompt_bytes(const GenerationRequest& r) {
  std::size_t n = r.prompt.size();
  for (const ChatMessage& m : r.messages) n += m.content.size();
  return n;
}

}  // namespace

std::expected<std::unique_ptr<GenerationJob>, ApiError> start_generation(ServerContext& ctx, ApiEndpoint endpoint,
                                                                        const nlohmann::json& body,
                                                                        TokenStream::ReadyCallback on_ready,
                                                                        std::string_view api_key_scope) {
  auto request = endpoint == ApiEndpoint::Chat ? parse_chat_request(body, ctx.options.defaults)
                                               : parse_completion_request(body, ctx.options.defaults);
  if (!request) return std::unexpected(request.error());
  request->cache_namespace = cache_namespace_for(api_key_scope, request->cache_salt);
  const std::string param = endpoint == ApiEndpoint::Chat ? "messages" : "prompt";
  const std::size_t max_prompt = ctx.options.limits.max_prompt_bytes;
  if (prompt_bytes(*request) > max_prompt)
    return std::unexpected(invalid_field_error(param,
                                               "the prompt is " + std::to_string(prompt_bytes(*request)) +
                                                   " bytes; this server takes at most " + std::to_string(max_prompt) +
                                                   " (more than its context can hold)",
                                               "context_length_exceeded"));
  return GenerationJob::start(ctx, std::move(*request), std::move(on_ready));
}

nlohmann::json finished_response(const GenerationJob& job, std::vector<TokenLogprob> generated) {
  std::vector<TokenLogprob> logprobs = job.request().echo ? job.prompt_logprobs() : std::vector<TokenLogprob>{};
  for (auto& lp : generated) logprobs.push_back(std::move(lp));
  const std::optional<FinishDetails> details = job.finish_details();
  return completion_response(job.meta(), job.echo_text() + job.text(), job.finish_reason(), job.usage(),
                             job.request().logprobs ? &logprobs : nullptr, details ? &*details : nullptr);
}

}  // namespace clm
