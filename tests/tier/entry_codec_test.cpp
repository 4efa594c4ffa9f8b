// The stored form of an entry: it round-trips bit for bit, and no damage to
// its bytes (any truncation, any single flipped bit) decodes to an entry.
#include "tier/entry_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

#include "support/tier_entries.h"

namespace clm {
namespace {

TEST(EntryCodec, RoundTripsBitwise) {
  for (KvTypes type : {KvTypes{KvType::F16}, KvTypes{KvType::F32}, KvTypes{KvType::Q8_0},
                       KvTypes{KvType::Q8_0, KvType::F16}, KvTypes{KvType::F32, KvType::Q8_0}, KvTypes{KvType::Q4_0},
                       KvTypes{KvType::Q8_0, KvType::Q4_0}, KvTypes{KvType::Fp8}, KvTypes{KvType::Fp8, KvType::F16}}) {
    KvGeometry g = test::small_tier_geometry();
    g.types = type;
    const TierEntry e = test::make_tier_entry(0x1234, 99, 98, g);
    const std::vector<std::byte> bytes = encode_entry(e);
    EXPECT_EQ(bytes.size() % 8, 0u) << "the data is aligned to 8 bytes";
    Result<TierEntry> back = decode_entry(bytes);
    ASSERT_TRUE(back.has_value()) << back.error().message;
    EXPECT_TRUE(test::same_entry(*back, e));
  }
}

// The header names each tensor's own type and shape: a q8_0 tensor is raw
// bytes (U8) with rows of kv_row_bytes, and K and V may differ.
TEST(EntryCodec, TheHeaderNamesEachTensorsType) {
  KvGeometry g = test::small_tier_geometry();
  g.types = {KvType::Q8_0, KvType::F16};
  const std::vector<std::byte> bytes = encode_entry(test::make_tier_entry(0x1234, 99, 98, g));
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
  const std::string header(reinterpret_cast<const char*>(bytes.data()) + 8, length);
  EXPECT_NE(header.find("\"k_type\":\"q8_0\""), std::string::npos) << header;
  EXPECT_NE(header.find("\"v_type\":\"f16\""), std::string::npos) << header;
  EXPECT_NE(header.find("\"dtype\":\"U8\",\"shape\":[2,2,4,10]"), std::string::npos) << header;
  EXPECT_NE(header.find("\"dtype\":\"F16\",\"shape\":[2,2,4,8]"), std::string::npos) << header;
}

// q4_0 and fp8 are raw bytes too: rows of 6 bytes for q4_0 (a 2-byte scale,
// 8 nibbles) and 9 for fp8 (a 1-byte exponent, 8 values) at head_dim 8, and
// the name says which quantized type they are.
TEST(EntryCodec, Q4AndFp8TensorsAreRawRows) {
  for (auto [type, row] : {std::pair{KvType::Q4_0, 6}, std::pair{KvType::Fp8, 9}}) {
    KvGeometry g = test::small_tier_geometry();
    g.types = {KvType::F16, type};
    const std::vector<std::byte> bytes = encode_entry(test::make_tier_entry(0x1234, 99, 98, g));
    uint64_t length = 0;
    for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
    const std::string header(reinterpret_cast<const char*>(bytes.data()) + 8, length);
    EXPECT_NE(header.find("\"v_type\":\"" + std::string(kv_type_name(type)) + "\""), std::string::npos) << header;
    EXPECT_NE(header.find("\"dtype\":\"U8\",\"shape\":[2,2,4," + std::to_string(row) + "]"), std::string::npos)
        << header;
  }
}

TEST(EntryCodec, EveryTruncationFails) {
  const std::vector<std::byte> bytes = encode_entry(test::make_tier_entry(0x1234, 99, 98));
  for (std::size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(decode_entry(std::span(bytes).first(n)).has_value()) << n;
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  EXPECT_FALSE(decode_entry(longer).has_value());
}

TEST(EntryCodec, EverySingleBitFlipFails) {
  const std::vector<std::byte> bytes = encode_entry(test::make_tier_entry(0x1234, 99, 98));
  std::vector<std::byte> damaged = bytes;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      damaged[i] ^= std::byte(1u << bit);
      EXPECT_FALSE(decode_entry(damaged).has_value()) << "byte " << i << " bit " << bit;
      damaged[i] = bytes[i];
    }
  }
}

TEST(EntryCodec, HostileHeadersAreRejected) {
  auto with_header = [](const std::string& header) {
    std::vector<std::byte> out(8 + header.size());
    for (int i = 0; i < 8; ++i) out[i] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xff);
    std::memcpy(out.data() + 8, header.data(), header.size());
    return out;
  };
  EXPECT_FALSE(decode_entry(with_header("[]")).has_value());
  EXPECT_FALSE(decode_entry(with_header("{\"__metadata__\": {\"format\": \"other\"}}")).has_value());
  // Dimensions beyond the limits must not make the reader allocate.
  EXPECT_FALSE(decode_entry(with_header("{\"__metadata__\": {\"format\": \"clmcache-kv-block\", \"version\": \"1\","
                                        " \"n_layers\": \"100000000\", \"n_kv_heads\": \"8\", \"head_dim\": \"128\","
                                        " \"block_size\": \"32\"}}"))
                   .has_value());
  std::vector<std::byte> huge_length(16, std::byte{0xff});
  EXPECT_FALSE(decode_entry(huge_length).has_value());
}

}  // namespace
}  // namespace clm
