// Who may call the server: the checks made on a request's head before its
// body is read. Browsers are the concern here: a page from another origin
// may POST to a local server (a "simple" text/plain request needs no
// preflight), and a DNS-rebinding page reaches it under a name it controls.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/api_error.h"
#include "app/http_message.h"

namespace clm {

struct AccessPolicy {
  std::string bound_host;                 // --host
  bool api_key_set = false;               // with a key, the key is the gate and any Host is fine
  std::vector<std::string> cors_origins;  // --cors-origin; "*" allows any
};

// The Host header names this server: the --host it was started with, the
// address the connection came in on (local_address: for a server bound to
// 0.0.0.0, whichever of its addresses the client used), or, on a loopback
// connection, "localhost" or any loopback address; a port may follow. An
// address literal cannot be produced by DNS rebinding, but one naming
// another machine means the request was meant for somewhere else.
bool host_allowed(const AccessPolicy& policy, std::string_view host_header, std::string_view local_address);

// No Origin (not a browser), the server's own origin ("http://" + Host), or
// one listed with --cors-origin.
bool origin_allowed(const AccessPolicy& policy, std::string_view origin, std::string_view host_header);

// 400/403 when the request may not proceed; nullopt when it may.
// local_address: the connection's own address (as host_allowed).
std::optional<ApiError> check_access(const AccessPolicy& policy, const HttpRequest& head,
                                     std::string_view local_address);

// The CORS headers a response to an allowed cross-origin request carries;
// empty for same-origin and non-browser requests.
std::vector<std::pair<std::string, std::string>> cors_headers(const AccessPolicy& policy, const HttpRequest& head);

// The answer to a preflight (OPTIONS with Access-Control-Request-Method).
HttpResponse preflight_response(const AccessPolicy& policy, const HttpRequest& head);

}  // namespace clm
