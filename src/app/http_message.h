// The server's own request and response types: what a route handler sees
// and returns, independent of the HTTP library that reads and writes them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace clm {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // the target without its query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first header of that name (compared without case); empty: none.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // besides type, length and connection
  std::string body;

  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
};

bool header_name_equals(std::string_view a, std::string_view b);

}  // namespace clm
