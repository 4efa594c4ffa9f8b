#include "app/http_reply.h"

#include "app/sse.h"

namespace clm {

void reply_json(httplib::Response& res, const nlohmann::json& body, int status) {
  res.status = status;
  res.set_content(to_json_text(body), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& error) {
  if (error.retry_after_s > 0) res.set_header("Retry-After", std::to_string(error.retry_after_s));
  reply_json(res, error.to_json(), error.status);
}

}  // namespace clm
