// A request head as Boost.Beast parsed it, turned into the server's own
// HttpRequest (http_message.h): what the access checks and the routes see.
// Kept apart from the session so that it can be tried on any bytes.
#pragma once

#include <expected>
#include <string>

#include <boost/beast/http.hpp>

#include "app/api_error.h"
#include "app/http_message.h"

namespace clm {

// 431, "the request head is too large: <what>".
ApiError header_too_large_error(const std::string& what);

// Method, path (the target without its query) and header fields, in order;
// more than max_headers fields is a 431 (--max-headers). The body is left
// empty.
std::expected<HttpRequest, ApiError> request_from_head(const boost::beast::http::request_header<>& head,
                                                       int max_headers);

}  // namespace clm
