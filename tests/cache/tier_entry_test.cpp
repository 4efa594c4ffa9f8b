#include "cache/tier_entry.h"

#include <gtest/gtest.h>

namespace clm {
namespace {

TierEntry small_entry() {
  TierEntry e;
  e.model_fingerprint = 0x1234;
  e.key = 77;
  e.parent = 5;
  e.geometry = KvGeometry{2, 1, 4, 4, KvType::F16};
  e.tokens = {1, 2, 3, 4};
  e.positions = {8, 9, 10, 11};
  e.kv.resize(e.geometry.block_bytes());
  for (std::size_t i = 0; i < e.kv.size(); ++i) e.kv[i] = static_cast<std::byte>(i * 7);
  return e;
}

TEST(TierEntry, ChecksumSeesEveryPart) {
  const TierEntry base = small_entry();
  const uint64_t sum = entry_checksum(base);
  EXPECT_EQ(entry_checksum(small_entry()), sum);
  auto changed = [&](auto edit) {
    TierEntry e = small_entry();
    edit(e);
    return entry_checksum(e) != sum;
  };
  EXPECT_TRUE(changed([](TierEntry& e) { e.model_fingerprint ^= 1; }));
  EXPECT_TRUE(changed([](TierEntry& e) { e.key ^= 1; }));
  EXPECT_TRUE(changed([](TierEntry& e) { e.parent ^= 1; }));
  EXPECT_TRUE(changed([](TierEntry& e) { e.tokens[2] ^= 1; }));
  EXPECT_TRUE(changed([](TierEntry& e) { e.positions[0] ^= 1; }));
  EXPECT_TRUE(changed([](TierEntry& e) { e.kv[e.kv.size() - 1] ^= std::byte{1}; }));
  EXPECT_TRUE(changed([](TierEntry& e) { e.geometry.types = KvType::F32; }));
}

TEST(TierEntry, DefectsNameWhatIsWrong) {
  const TierEntry e = small_entry();
  EXPECT_EQ(entry_defect(e, 0x1234, 77, e.geometry), nullptr);
  EXPECT_NE(entry_defect(e, 0x9999, 77, e.geometry), nullptr);
  EXPECT_NE(entry_defect(e, 0x1234, 78, e.geometry), nullptr);
  KvGeometry other = e.geometry;
  other.head_dim = 8;
  EXPECT_NE(entry_defect(e, 0x1234, 77, other), nullptr);
  TierEntry short_kv = small_entry();
  short_kv.kv.pop_back();
  EXPECT_NE(entry_defect(short_kv, 0x1234, 77, e.geometry), nullptr);
  TierEntry few_tokens = small_entry();
  few_tokens.tokens.pop_back();
  EXPECT_NE(entry_defect(few_tokens, 0x1234, 77, e.geometry), nullptr);
}

}  // namespace
}  // namespace clm
