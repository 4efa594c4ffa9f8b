// Cache namespaces keep tenants apart: requests in different namespaces never
// share a KV block or a reused span, in RAM or in any tier (the namespace is
// hashed into every block key). A request's namespace comes from its
// `cache_salt` and, with --namespace-per-api-key, from the key it used.
// Namespace 0 (no salt, no per-key namespace) is the one shared by default,
// so the entries stored before namespaces existed stay valid.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace clm {

// 0 when both are empty; otherwise a hash of both that is never 0, with each
// part's length hashed too so that ("ab", "c") and ("a", "bc") differ.
uint64_t cache_namespace_for(std::string_view api_key_scope, std::string_view cache_salt);

// A session id as the server stores it: the client's id in namespace 0, or
// one prefixed with the namespace, so that the same session_id in two
// namespaces names two sessions. The prefix starts with a control character,
// which a client's session_id may not contain.
std::string scoped_session_id(uint64_t cache_namespace, const std::string& session_id);
// The namespace a scoped session id belongs to (0 for an unprefixed one).
uint64_t session_namespace(std::string_view scoped_id);

}  // namespace clm
