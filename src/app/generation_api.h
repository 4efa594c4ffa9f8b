// The generation API without its transport: a request body in, a running
// GenerationJob out, and the finished job's response object. The HTTP routes
// and the Python module both call these, so a request means the same thing
// (the same checks, the same limits, the same answer) however it arrives.
#pragma once

#include <expected>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/api_error.h"
#include "app/generation_job.h"
#include "app/openai_response.h"
#include "app/server_context.h"

namespace clm {

// Parses body for the endpoint, checks it against the server's limits
// (prompt bytes, logprob entries) and starts its generation; on_ready as in
// GenerationJob::start. Refusals carry their HTTP status. api_key_scope:
// the API key the request came with when each key has its own cache
// namespace (--namespace-per-api-key), else empty.
std::expected<std::unique_ptr<GenerationJob>, ApiError> start_generation(ServerContext& ctx, ApiEndpoint endpoint,
                                                                        const nlohmann::json& body,
                                                                        TokenStream::ReadyCallback on_ready = {},
                                                                        std::string_view api_key_scope = {});

// The whole response of a job that is done(): with echo, the prompt's text
// and logprobs come first; `generated` are the logprobs its steps carried.
nlohmann::json finished_response(const GenerationJob& job, std::vector<TokenLogprob> generated);

}  // namespace clm
