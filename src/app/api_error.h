// ApiError: an HTTP error in the OpenAI shape, {"error": {"message", "type",
// "param", "code"}}, with the status it is sent under. Every refusal the
// server makes is one of these, so clients see one error format everywhere.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace clm {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field; empty: none
  std::string code;   // machine-readable reason; empty: none
  int retry_after_s = 0;  // > 0: sent as a Retry-After header (429, 503)

  nlohmann::json to_json() const;
};

// The errors the server makes in more than one place.
ApiError invalid_json_error(const std::string& detail);
ApiError invalid_field_error(const std::string& param, const std::string& message,
                             const std::string& code = "invalid_value");
ApiError unsupported_value_error(const std::string& param, const std::string& message);
ApiError model_not_found_error(const std::string& model);
ApiError route_not_found_error(const std::string& method, const std::string& path);
ApiError unauthorized_error();
ApiError body_too_large_error(std::size_t limit_bytes);
ApiError server_busy_error(int retry_after_s);
ApiError server_error(const std::string& message);

}  // namespace clm
