// SHA-256 (FIPS 180-4), for identities other programs compute the same way
// (vLLM's block hashes), and HMAC-SHA256 (RFC 2104) for values a shared
// store must not let others forge (Redis entries); not used on any hot path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace clm {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::span<const uint8_t> data);

// HMAC-SHA256 of the concatenation of `parts` under `key`.
Sha256Digest hmac_sha256(std::span<const uint8_t> key, std::initializer_list<std::span<const uint8_t>> parts);

// Whether two digests are equal, in time that does not depend on where they
// first differ.
bool same_digest(const Sha256Digest& a, const Sha256Digest& b);

}  // namespace clm
