// API key check for the HTTP server: "Authorization: Bearer KEY" compared in
// time that does not depend on where the first difference is.
#pragma once

#include <string_view>

namespace clm {

// True when no key is configured, or the header carries exactly that key.
bool api_key_accepted(std::string_view configured_key, std::string_view authorization_header);

}  // namespace clm
