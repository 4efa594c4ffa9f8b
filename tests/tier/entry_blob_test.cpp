#include "tier/entry_blob.h"

#include <gtest/gtest.h>

namespace clm {
namespace {

TierEntry sample_entry() {
  TierEntry e;
  e.model_fingerprint = 0xabcdef;
  e.key = 991;
  e.parent = 17;
  e.geometry = KvGeometry{2, 1, 4, 4, KvType::F32};
  e.tokens = {5, 6, 7, 8};
  e.positions = {4, 5, 6, 7};
  e.kv.resize(e.geometry.block_bytes());
  for (std::size_t i = 0; i < e.kv.size(); ++i) e.kv[i] = static_cast<std::byte>(i * 13 + 1);
  return e;
}

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span<const char>(s)); }

TEST(EntryBlob, RoundTripKeepsEveryField) {
  const TierEntry e = sample_entry();
  const std::string blob = encode_entry(e);
  auto back = decode_entry(bytes_of(blob));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->model_fingerprint, e.model_fingerprint);
  EXPECT_EQ(back->key, e.key);
  EXPECT_EQ(back->parent, e.parent);
  EXPECT_EQ(back->tokens, e.tokens);
  EXPECT_EQ(back->positions, e.positions);
  EXPECT_EQ(back->kv, e.kv);
  EXPECT_EQ(back->geometry.type, KvType::F32);
  EXPECT_EQ(back->geometry.block_size, 4);
  EXPECT_EQ(entry_checksum(*back), entry_checksum(e));
}

TEST(EntryBlob, EveryTruncationIsRefused) {
  const std::string blob = encode_entry(sample_entry());
  for (std::size_t n = 0; n < blob.size(); ++n)
    EXPECT_FALSE(decode_entry(bytes_of(blob.substr(0, n)))) << "length " << n;
  EXPECT_FALSE(decode_entry(bytes_of(blob + "x"))) << "a trailing byte";
}

TEST(EntryBlob, EveryFlippedBitIsRefused) {
  const std::string blob = encode_entry(sample_entry());
  for (std::size_t i = 0; i < blob.size(); ++i) {
    // The reserved header byte is not part of the entry; every other byte is.
    if (i == 7) continue;
    for (int bit = 0; bit < 8; bit += 3) {
      std::string bad = blob;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_FALSE(decode_entry(bytes_of(bad))) << "byte " << i << " bit " << bit;
    }
  }
}

TEST(EntryBlob, HugeCountsAreRefusedBeforeAllocating) {
  std::string blob = encode_entry(sample_entry());
  // n_tokens at offset 48: a count far beyond any block.
  const uint32_t huge = 0x7fffffff;
  blob.replace(48, 4, reinterpret_cast<const char*>(&huge), 4);
  auto r = decode_entry(bytes_of(blob));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("count"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace clm
