// Errors by kind: each kind's status and type, engine errors mapped by kind
// (never by their words), and the helpers' JSON exactly as clients saw it
// before kinds existed.
#include <gtest/gtest.h>

#include "app/api_error.h"

namespace clm {
namespace {

using nlohmann::json;

json error_json(const std::string& message, const std::string& type, const json& param, const json& code) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param}, {"code", code}}}};
}

TEST(ApiError, EveryKindHasItsStatusAndType) {
  const std::pair<ErrorKind, int> statuses[] = {
      {ErrorKind::InvalidRequest, 400}, {ErrorKind::ContextExceeded, 400}, {ErrorKind::Unauthorized, 401}, {ErrorKind::Forbidden, 403},
      {ErrorKind::NotFound, 404},       {HttpErrorKind::MethodNotAllowed, 405}, {ErrorKind::TooLarge, 413},
      {HttpErrorKind::UriTooLong, 414},     {ErrorKind::Unsupported, 422},
      {ErrorKind::Overloaded, 429},     {HttpErrorKind::HeadersTooLarge, 431}, {ErrorKind::Internal, 500},
      {ErrorKind::Unavailable, 503}};
  for (const auto& [kind, status] : statuses) {
    EXPECT_EQ(http_status(kind), status);
    const ApiError e = api_error(kind, "m");
    EXPECT_EQ(e.status, status);
    EXPECT_EQ(e.kind, kind);
    EXPECT_EQ(e.type, status >= 500 || status == 429 ? "server_error" : "invalid_request_error") << status;
  }
  // A bare status from the transport: the kind it stands for.
  EXPECT_EQ(kind_of_http_status(400), ErrorKind::InvalidRequest);
  EXPECT_EQ(kind_of_http_status(405), HttpErrorKind::MethodNotAllowed);
  EXPECT_EQ(kind_of_http_status(414), HttpErrorKind::UriTooLong);
  EXPECT_EQ(kind_of_http_status(599), ErrorKind::Internal);
}

TEST(ApiError, EngineErrorsMapByKindNotByMessage) {
  // The same words under different kinds answer differently.
  const std::string words = "request queue full";
  const ApiError busy = api_error_from(Error{words, ErrorKind::Overloaded}, "prompt", 7);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.code, "server_busy");
  EXPECT_EQ(busy.retry_after_s, 7);
  const ApiError invalid = api_error_from(Error{words, ErrorKind::InvalidRequest}, "prompt", 7);
  EXPECT_EQ(invalid.status, 400);
  EXPECT_EQ(invalid.param, "prompt");
  EXPECT_EQ(invalid.message, words);
  const ApiError stopped = api_error_from(Error{"the scheduler is stopped", ErrorKind::Unavailable}, "prompt", 3);
  EXPECT_EQ(stopped.status, 503);
  EXPECT_EQ(stopped.code, "shutting_down");
  EXPECT_EQ(stopped.retry_after_s, 3);
  const ApiError context = api_error_from(Error{"too long", ErrorKind::ContextExceeded}, "messages", 0);
  EXPECT_EQ(context.status, 400);
  EXPECT_EQ(context.code, "context_length_exceeded");
  EXPECT_EQ(api_error_from(Error{"too many blocks", ErrorKind::TooLarge}, "prompt", 0).status, 400);
  EXPECT_EQ(api_error_from(Error{"boom"}, "prompt", 0).status, 500);  // no kind given: ours
}

TEST(ApiError, HelpersKeepTheirStatusAndJson) {
  EXPECT_EQ(invalid_json_error("x").to_json(),
            error_json("the request body is not valid JSON: x", "invalid_request_error", nullptr, "invalid_json"));
  EXPECT_EQ(invalid_json_error("x").status, 400);
  EXPECT_EQ(invalid_field_error("top_p", "bad").to_json(),
            error_json("bad", "invalid_request_error", "top_p", "invalid_value"));
  EXPECT_EQ(unsupported_value_error("n", "one").status, 422);
  EXPECT_EQ(unsupported_value_error("n", "one").to_json(),
            error_json("one", "invalid_request_error", "n", "unsupported_value"));
  EXPECT_EQ(model_not_found_error("m").status, 404);
  EXPECT_EQ(model_not_found_error("m").to_json()["error"]["code"], "model_not_found");
  EXPECT_EQ(route_not_found_error("GET", "/x").to_json(),
            error_json("no route GET /x", "invalid_request_error", nullptr, "not_found"));
  EXPECT_EQ(unauthorized_error().status, 401);
  EXPECT_EQ(unauthorized_error().to_json()["error"]["code"], "invalid_api_key");
  EXPECT_EQ(body_too_large_error(10).status, 413);
  EXPECT_EQ(body_too_large_error(10).to_json(),
            error_json("the request body is larger than 10 bytes", "invalid_request_error", nullptr,
                       "request_too_large"));
  EXPECT_EQ(server_busy_error(2).status, 429);
  EXPECT_EQ(server_busy_error(2).to_json(),
            error_json("the server's request queue is full; retry later", "server_error", nullptr, "server_busy"));
  EXPECT_EQ(shutting_down_error("bye", 1).to_json(), error_json("bye", "server_error", nullptr, "shutting_down"));
  EXPECT_EQ(server_error("oops").status, 500);
  EXPECT_EQ(server_error("oops").to_json(), error_json("oops", "server_error", nullptr, "internal_error"));
}

}  // namespace
}  // namespace clm
