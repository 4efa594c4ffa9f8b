#include "app/http_reply.h"

#include "app/sse.h"

namespace clm {

void reply_json(HttpResponse& res, const nlohmann::json& body, int status) {
  res.status = status;
  res.content_type = "application/json";
  res.body = to_json_text(body);
}

void reply_error(HttpResponse& res, const ApiError& error) {
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  reply_json(res, error.to_json(), error.status);
}

HttpResponse error_response(const ApiError& error) {
  HttpResponse res;
  reply_error(res, error);
  return res;
}

HttpResponse html_response(std::string_view page) {
  HttpResponse res;
  res.content_type = "text/html; charset=utf-8";
  res.body = std::string(page);
  return res;
}

}  // namespace clm
