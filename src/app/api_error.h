// ApiError: an HTTP error in the OpenAI shape, {"error": {"message", "type",
// "param", "code"}}, with the status it is sent under. Every refusal the
// server makes is one of these, so clients see one error format everywhere.
// An error is made from its kind (util/error.h, or app/http_error_kind.h for
// the refusals only HTTP makes); the status and the type follow from the
// kind alone (http_status, error_type), so nothing downstream reads a
// message to decide how to answer.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "app/http_error_kind.h"
#include "util/error.h"

namespace clm {

// 400 for a bad request or a prompt over the context, 401, 404, 405, 413,
// 414, 422 (unsupported), 429 (overloaded), 431, 500, 503 (unavailable).
int http_status(ErrorKind kind);
// "server_error" for what is the server's doing (internal, overloaded,
// unavailable), else "invalid_request_error".
std::string error_type(ErrorKind kind);
// The kind a bare HTTP status stands for, for refusals a transport library
// makes before any of our code runs (it hands over only a status). A status
// no kind has is Internal.
ErrorKind kind_of_http_status(int status);

struct ApiError {
  int status = 400;  // http_status(kind); kept beside it for the transport
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field; empty: none
  std::string code;   // machine-readable reason; empty: none
  int retry_after_s = 0;  // > 0: sent as a Retry-After header (429, 503)
  ErrorKind kind = ErrorKind::InvalidRequest;

  nlohmann::json to_json() const;
};

// The one way to make an ApiError: status and type from the kind.
ApiError api_error(ErrorKind kind, std::string message, std::string param = {}, std::string code = {},
                   int retry_after_s = 0);
// An engine error as the API reports it, about request field `param`:
// Overloaded is server_busy_error, Unavailable a shutdown, ContextExceeded
// "context_length_exceeded", and the rest their kind's status.
ApiError api_error_from(const Error& error, const std::string& param, int retry_after_s);

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
ApiError shutting_down_error(const std::string& message, int retry_after_s);
ApiError server_error(const std::string& message);

}  // namespace clm
