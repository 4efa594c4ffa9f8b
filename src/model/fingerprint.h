// The model fingerprint: one 64-bit hash that changes whenever anything that
// shapes the K/V of a token changes — the architecture metadata, the tensor
// directory (names, types, shapes) or any byte of any tensor. Cache keys
// include it, so K/V computed by one model is never served to another.
#pragma once

#include <cstdint>

#include "model/gguf.h"

namespace clm {

uint64_t model_fingerprint(const GgufFile& file);

}  // namespace clm
