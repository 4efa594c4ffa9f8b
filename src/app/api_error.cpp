#include "app/api_error.h"

namespace clm {

nlohmann::json ApiError::to_json() const {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error", {{"message", message}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

ApiError invalid_json_error(const std::string& detail) {
  return {400, "the request body is not valid JSON: " + detail, "invalid_request_error", "", "invalid_json"};
}

ApiError invalid_field_error(const std::string& param, const std::string& message, const std::string& code) {
  return {400, message, "invalid_request_error", param, code};
}

// 422: the request is well-formed and means something OpenAI accepts, but
// this server does not implement it; a client can tell that apart from a typo.
ApiError unsupported_value_error(const std::string& param, const std::string& message) {
  return {422, message, "invalid_request_error", param, "unsupported_value"};
}

ApiError model_not_found_error(const std::string& model) {
  return {404, "the model '" + model + "' does not exist; GET /v1/models lists the one this server runs",
          "invalid_request_error", "model", "model_not_found"};
}

ApiError route_not_found_error(const std::string& method, const std::string& path) {
  return {404, "no route " + method + " " + path, "invalid_request_error", "", "not_found"};
}

ApiError unauthorized_error() {
  return {401, "missing or invalid API key; send it as 'Authorization: Bearer KEY'", "invalid_request_error", "",
          "invalid_api_key"};
}

ApiError body_too_large_error(std::size_t limit_bytes) {
  return {413, "the request body is larger than " + std::to_string(limit_bytes) + " bytes", "invalid_request_error",
          "", "request_too_large"};
}

ApiError server_busy_error(int retry_after_s) {
  return {429, "the server's request queue is full; retry later", "server_error", "", "server_busy", retry_after_s};
}

ApiError server_error(const std::string& message) { return {500, message, "server_error", "", "internal_error"}; }

}  // namespace clm
