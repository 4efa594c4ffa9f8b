#include "app/http_policy.h"

#include <arpa/inet.h>

#include <algorithm>

#include "app/http_reply.h"

namespace clm {

namespace {

// "name", "name:port", "[v6]" or "[v6]:port" -> the name without the port.
std::string_view host_name(std::string_view host) {
  if (host.starts_with('[')) {
    const std::size_t close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(1, close - 1);
  }
  const std::size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

bool is_ip_literal(std::string_view name) {
  const std::string s(name);
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) { return header_name_equals(a, b); }

bool listed(const AccessPolicy& policy, std::string_view origin) {
  return std::any_of(policy.cors_origins.begin(), policy.cors_origins.end(),
                     [&](const std::string& o) { return o == "*" || equals_ignoring_case(o, origin); });
}

ApiError forbidden(const std::string& message, const std::string& code) {
  return api_error(ErrorKind::Forbidden, message, "", code);
}

}  // namespace

bool host_allowed(const AccessPolicy& policy, std::string_view host_header) {
  const std::string_view name = host_name(host_header);
  if (name.empty()) return false;
  return is_ip_literal(name) || equals_ignoring_case(name, "localhost") ||
         equals_ignoring_case(name, policy.bound_host);
}

bool origin_allowed(const AccessPolicy& policy, std::string_view origin, std::string_view host_header) {
  if (origin.empty()) return true;
  if (!host_header.empty() && equals_ignoring_case(origin, "http://" + std::string(host_header))) return true;
  return listed(policy, origin);
}

std::optional<ApiError> check_access(const AccessPolicy& policy, const HttpRequest& head) {
  const std::string_view host = head.header("Host");
  if (!policy.api_key_set && !host_allowed(policy, host))
    return forbidden("the Host header '" + std::string(host) +
                         "' does not name this server; without --api-key only its address or localhost is accepted",
                     "host_not_allowed");
  const std::string_view origin = head.header("Origin");
  if (!origin_allowed(policy, origin, host))
    return forbidden("requests from the origin '" + std::string(origin) +
                         "' are not allowed; start the server with --cors-origin to allow it",
                     "origin_not_allowed");
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> cors_headers(const AccessPolicy& policy, const HttpRequest& head) {
  const std::string_view origin = head.header("Origin");
  const std::string_view host = head.header("Host");
  if (origin.empty() || equals_ignoring_case(origin, "http://" + std::string(host)) || !listed(policy, origin))
    return {};
  return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
}

HttpResponse preflight_response(const AccessPolicy& policy, const HttpRequest& head) {
  HttpResponse res;
  res.status = 204;
  res.content_type.clear();
  for (auto& h : cors_headers(policy, head)) res.headers.push_back(std::move(h));
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
  res.set_header("Access-Control-Max-Age", "600");
  return res;
}

}  // namespace clm
