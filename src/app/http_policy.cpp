#include "app/http_policy.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>

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

// An IPv4 or IPv6 address literal, parsed; family 0 when `name` is not one.
struct IpAddress {
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  bool operator==(const IpAddress&) const = default;
  bool loopback() const {
    static constexpr std::array<unsigned char, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return (family == AF_INET && bytes[0] == 127) || (family == AF_INET6 && bytes == kV6Loopback);
  }
};

IpAddress parse_ip(std::string_view name) {
  const std::string s(name);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) a.family = AF_INET;
  else if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) a.family = AF_INET6;
  return a;
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

bool host_allowed(const AccessPolicy& policy, std::string_view host_header, std::string_view local_address) {
  const std::string_view name = host_name(host_header);
  if (name.empty()) return false;
  if (equals_ignoring_case(name, policy.bound_host)) return true;
  const IpAddress named = parse_ip(name);
  const IpAddress local = parse_ip(local_address);
  if (local.loopback() && (equals_ignoring_case(name, "localhost") || named.loopback())) return true;
  return named.family != 0 && named == local;
}

bool origin_allowed(const AccessPolicy& policy, std::string_view origin, std::string_view host_header) {
  if (origin.empty()) return true;
  if (!host_header.empty() && equals_ignoring_case(origin, "http://" + std::string(host_header))) return true;
  return listed(policy, origin);
}

std::optional<ApiError> check_access(const AccessPolicy& policy, const HttpRequest& head,
                                     std::string_view local_address) {
  const std::string_view host = head.header("Host");
  // A request with no Host at all (HTTP/1.0, as load balancers' health
  // checks send) cannot come from a browser, and so not from a rebinding
  // page: browsers always send the Host they resolved. Only a Host that is
  // present and names another server is refused.
  const bool host_absent = !head.has_header("Host");
  if (!policy.api_key_set && !host_absent && !host_allowed(policy, host, local_address))
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
