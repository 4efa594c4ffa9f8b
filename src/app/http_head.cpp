#include "app/http_head.h"

namespace clm {

ApiError header_too_large_error(const std::string& what) {
  return api_error(HttpErrorKind::HeadersTooLarge, "the request head is too large: " + what, "",
                   "request_header_fields_too_large");
}

std::expected<HttpRequest, ApiError> request_from_head(const boost::beast::http::request_header<>& head,
                                                       int max_headers) {
  HttpRequest request;
  request.method = std::string(head.method_string());
  const std::string target(head.target());
  request.path = target.substr(0, target.find('?'));
  int fields = 0;
  for (const auto& f : head) {
    if (++fields > max_headers)
      return std::unexpected(
          header_too_large_error("more than " + std::to_string(max_headers) + " header fields (--max-headers)"));
    request.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  }
  return request;
}

}  // namespace clm
