#include "app/vllm_block_hash.h"

#include <vector>

namespace clm {

namespace {

// A CBOR head: major type and argument in the shortest form (RFC 8949 4.2.1,
// as canonical encoders write it).
void cbor_head(std::vector<uint8_t>& out, uint8_t major, uint64_t value) {
  const uint8_t m = static_cast<uint8_t>(major << 5);
  if (value < 24) {
    out.push_back(static_cast<uint8_t>(m | value));
    return;
  }
  int bytes = 8;
  uint8_t info = 27;
  if (value <= 0xff) bytes = 1, info = 24;
  else if (value <= 0xffff) bytes = 2, info = 25;
  else if (value <= 0xffffffff) bytes = 4, info = 26;
  out.push_back(static_cast<uint8_t>(m | info));
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

constexpr uint8_t kUnsigned = 0, kNegative = 1, kBytes = 2, kText = 3, kArray = 4;
constexpr uint8_t kNull = 0xf6;

}  // namespace

VllmBlockHasher::VllmBlockHasher(std::string_view seed) {
  std::vector<uint8_t> cbor;
  cbor_head(cbor, kText, seed.size());
  cbor.insert(cbor.end(), seed.begin(), seed.end());
  none_hash_ = sha256(cbor);
}

Sha256Digest VllmBlockHasher::block(const Sha256Digest* parent, std::span<const int32_t> tokens) const {
  std::vector<uint8_t> cbor;
  cbor.reserve(40 + tokens.size() * 3);
  cbor_head(cbor, kArray, 3);
  const Sha256Digest& p = parent ? *parent : none_hash_;
  cbor_head(cbor, kBytes, p.size());
  cbor.insert(cbor.end(), p.begin(), p.end());
  cbor_head(cbor, kArray, tokens.size());
  for (int32_t t : tokens) {
    if (t >= 0) cbor_head(cbor, kUnsigned, static_cast<uint64_t>(t));
    else cbor_head(cbor, kNegative, static_cast<uint64_t>(-(static_cast<int64_t>(t) + 1)));
  }
  cbor.push_back(kNull);  // extra_keys
  return sha256(cbor);
}

uint64_t VllmBlockHasher::as_event_hash(const Sha256Digest& d) {
  uint64_t v = 0;
  for (std::size_t i = d.size() - 8; i < d.size(); ++i) v = (v << 8) | d[i];
  return v;
}

}  // namespace clm
