// Small helpers that write JSON bodies and OpenAI errors into an httplib
// response, so every route answers in the same format.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "app/api_error.h"

namespace clm {

void reply_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
void reply_error(httplib::Response& res, const ApiError& error);

}  // namespace clm
