#include "app/api_error.h"

#include <utility>

namespace clm {

namespace {

struct KindStatus {
  ErrorKind kind;
  int status;
};

// The statuses of the kinds; where two kinds share one (400), the first is
// what a bare status means.
constexpr KindStatus kStatuses[] = {
    {ErrorKind::InvalidRequest, 400},      {ErrorKind::ContextExceeded, 400},  {ErrorKind::Unauthorized, 401},
    {ErrorKind::Forbidden, 403},           {ErrorKind::NotFound, 404},         {HttpErrorKind::MethodNotAllowed, 405},
    {ErrorKind::TooLarge, 413},            {HttpErrorKind::UriTooLong, 414},   {ErrorKind::Unsupported, 422},
    {ErrorKind::Overloaded, 429},          {HttpErrorKind::HeadersTooLarge, 431},
    {ErrorKind::Internal, 500},            {ErrorKind::Unavailable, 503},
};

}  // namespace

int http_status(ErrorKind kind) {
  for (const KindStatus& ks : kStatuses)
    if (ks.kind == kind) return ks.status;
  return 500;
}

std::string error_type(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Internal:
    case ErrorKind::Overloaded:
    case ErrorKind::Unavailable: return "server_error";
    default: return "invalid_request_error";
  }
}

ErrorKind kind_of_http_status(int status) {
  for (const KindStatus& ks : kStatuses)
    if (ks.status == status) return ks.kind;
  return ErrorKind::Internal;
}

nlohmann::json ApiError::to_json() const {
  auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"error", {{"message", message}, {"type", type}, {"param", or_null(param)}, {"code", or_null(code)}}}};
}

ApiError api_error(ErrorKind kind, std::string message, std::string param, std::string code, int retry_after_s) {
  return {http_status(kind), std::move(message), error_type(kind), std::move(param), std::move(code), retry_after_s,
          kind};
}

ApiError api_error_from(const Error& error, const std::string& param, int retry_after_s) {
  switch (error.kind) {
    case ErrorKind::Overloaded: return server_busy_error(retry_after_s);
    case ErrorKind::Unavailable: return shutting_down_error("the server is shutting down", retry_after_s);
    case ErrorKind::ContextExceeded: return invalid_field_error(param, error.message, "context_length_exceeded");
    case ErrorKind::InvalidRequest:
    case ErrorKind::TooLarge: return invalid_field_error(param, error.message);
    default: return api_error(error.kind, error.message, param);
  }
}

ApiError invalid_json_error(const std::string& detail) {
  return api_error(ErrorKind::InvalidRequest, "the request body is not valid JSON: " + detail, "", "invalid_json");
}

// A prompt the engine cannot hold, however it is framed, is a field the
// client must change: 400 like any other invalid field.
ApiError invalid_field_error(const std::string& param, const std::string& message, const std::string& code) {
  return api_error(ErrorKind::InvalidRequest, message, param, code);
}

// 422: the request is well-formed and means something OpenAI accepts, but
// this server does not implement it; a client can tell that apart from a typo.
ApiError unsupported_value_error(const std::string& param, const std::string& message) {
  return api_error(ErrorKind::Unsupported, message, param, "unsupported_value");
}

ApiError model_not_found_error(const std::string& model) {
  return api_error(ErrorKind::NotFound,
                   "the model '" + model + "' does not exist; GET /v1/models lists the one this server runs", "model",
                   "model_not_found");
}

ApiError route_not_found_error(const std::string& method, const std::string& path) {
  return api_error(ErrorKind::NotFound, "no route " + method + " " + path, "", "not_found");
}

ApiError unauthorized_error() {
  return api_error(ErrorKind::Unauthorized, "missing or invalid API key; send it as 'Authorization: Bearer KEY'", "",
                   "invalid_api_key");
}

ApiError body_too_large_error(std::size_t limit_bytes) {
  return api_error(ErrorKind::TooLarge, "the request body is larger than " + std::to_string(limit_bytes) + " bytes",
                   "", "request_too_large");
}

ApiError server_busy_error(int retry_after_s) {
  return api_error(ErrorKind::Overloaded, "the server's request queue is full; retry later", "", "server_busy",
                   retry_after_s);
}

ApiError shutting_down_error(const std::string& message, int retry_after_s) {
  return api_error(ErrorKind::Unavailable, message, "", "shutting_down", retry_after_s);
}

ApiError server_error(const std::string& message) {
  return api_error(ErrorKind::Internal, message, "", "internal_error");
}

}  // namespace clm
