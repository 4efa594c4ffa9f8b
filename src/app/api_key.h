// API key check for the HTTP server: "Authorization: Bearer KEY" compared in
// time that does not depend on where the first difference is, against each
// configured key.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace clm {

// What follows "Bearer " in an Authorization header; empty when it is not a
// bearer credential.
std::string_view bearer_token(std::string_view authorization_header);

// True when no key is configured, or the header carries exactly one of them.
bool api_key_accepted(std::span<const std::string> configured_keys, std::string_view authorization_header);

// The keys in a key file: one a line; blank lines and lines starting with
// '#' are skipped, and so is the whitespace around a key. A file with no key
// is an error (a server meant to need a key must not start open).
Result<std::vector<std::string>> read_api_key_file(const std::string& path);

}  // namespace clm
