// SHA-256 (FIPS 180-4), for identities other programs compute the same way
// (vLLM's block hashes); not used on any hot path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace clm {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::span<const uint8_t> data);

}  // namespace clm
