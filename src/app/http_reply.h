// Small helpers that write JSON bodies and OpenAI errors into a response, so
// every route answers in the same format.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "app/api_error.h"
#include "app/http_message.h"

namespace clm {

void reply_json(HttpResponse& res, const nlohmann::json& body, int status = 200);
void reply_error(HttpResponse& res, const ApiError& error);
HttpResponse error_response(const ApiError& error);
// A page of the server (the chat page, the dashboard).
HttpResponse html_response(std::string_view page);

}  // namespace clm
