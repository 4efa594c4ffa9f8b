// The disk tier and the SQLite tier against real files in a temporary
// directory, with real fsync: round trips, damaged entries, other models'
// entries, dependents. Each test runs for both stores.
#include "tier/persistent_tier_fixture.h"

#include <nlohmann/json.hpp>

#include "tier/entry_codec.h"

namespace clm::test {
namespace {

TEST_P(PersistentTier, RoundTripIsBitwiseAcrossReopen) {
  const std::vector<TierEntry> entries = chain(100, 4);
  {
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
    EXPECT_EQ(tier->exists(keys(entries)), 4u);
  }
  auto tier = open();
  EXPECT_EQ(tier->name(), GetParam());
  EXPECT_EQ(tier->exists(keys(entries)), 4u);
  for (const TierEntry& e : entries) {
    std::optional<TierEntry> back = tier->get(e.key);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(same_entry(*back, e));
  }
  EXPECT_FALSE(tier->get(999).has_value());
  EXPECT_EQ(tier->counters().hits, 4u);
  EXPECT_EQ(tier->counters().misses, 1u);
}

TEST_P(PersistentTier, EntryIsAStandardSafetensorsFile) {
  const TierEntry e = make_tier_entry(kModel, 42, 7);
  auto tier = open();
  ASSERT_TRUE(tier->store().write(make_tier_entry(kModel, 7, kNoKey)));  // a child is stored only under its parent
  ASSERT_TRUE(tier->store().write(e));
  const std::vector<std::byte> bytes = stored_bytes(42);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const auto header = nlohmann::json::parse(text, text + length);
  const KvGeometry g = small_tier_geometry();
  const std::size_t half = g.block_bytes() / 2;
  EXPECT_EQ(header["k"]["dtype"], "F16");
  EXPECT_EQ(header["k"]["shape"], nlohmann::json({g.n_layers, g.n_kv_heads, g.block_size, g.head_dim}));
  EXPECT_EQ(header["v"]["data_offsets"], nlohmann::json({half, 2 * half}));
  EXPECT_EQ(header["__metadata__"]["key"], "000000000000002a");
  EXPECT_EQ(header["__metadata__"]["parent"], "0000000000000007");
  EXPECT_EQ(bytes.size(), 8 + length + g.block_bytes());
  // Layer 1's V, as the pool lays it out, is the second half of tensor v.
  const std::byte* v = bytes.data() + 8 + length + half;
  const std::size_t part = g.layer_bytes() / 2;
  EXPECT_TRUE(std::equal(v + part, v + 2 * part, e.kv.begin() + static_cast<std::ptrdiff_t>(g.layer_bytes() + part)));
}

TEST_P(PersistentTier, DamagedEntriesAreQuarantinedMissesWithTheirDependents) {
  struct Damage {
    const char* what;
    std::vector<std::byte> (*apply)(std::vector<std::byte>);
  };
  const Damage damages[] = {
      {"zero bytes", [](std::vector<std::byte>) { return std::vector<std::byte>(); }},
      {"truncated",
       [](std::vector<std::byte> b) {
         b.resize(b.size() - 100);
         return b;
       }},
      {"a flipped bit in K/V",
       [](std::vector<std::byte> b) {
         b[b.size() - 10] ^= std::byte{0x10};
         return b;
       }},
      {"a flipped bit in the header",
       [](std::vector<std::byte> b) {
         b[12] ^= std::byte{0x01};
         return b;
       }},
  };
  BlockKey first = 1000;
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    const std::vector<TierEntry> entries = chain(first, 3);
    auto tier = open();
    for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
    overwrite(first + 1, damage.apply(stored_bytes(first + 1)));
    EXPECT_FALSE(tier->get(first + 1).has_value());
    EXPECT_TRUE(quarantined(first + 1));
    // The damaged block's child went with it; its parent stays.
    EXPECT_EQ(tier->exists(keys(entries)), 1u);
    EXPECT_FALSE(tier->get(first + 2).has_value());
    EXPECT_TRUE(tier->get(first).has_value());
    EXPECT_EQ(tier->store().counters().quarantined, 1u);
    if (disk()) {
      EXPECT_FALSE(fs::exists(file_of(first + 2)));
    }
    first += 10;
  }
}

TEST_P(PersistentTier, AnotherModelsEntriesAreMissesAndStayTheirs) {
  const TierEntry mine = make_tier_entry(kModel, 5, kNoKey);
  const TierEntry theirs = make_tier_entry(kOtherModel, 6, kNoKey);
  ASSERT_TRUE(open(kOtherModel)->put(theirs));
  auto tier = open();
  ASSERT_TRUE(tier->put(mine));
  const BlockKey their_key[] = {6};
  EXPECT_EQ(tier->exists(their_key), 0u);
  EXPECT_FALSE(tier->get(6).has_value());
  EXPECT_FALSE(quarantined(6));
  EXPECT_TRUE(open(kOtherModel)->get(6).has_value());
  // A tier refuses to store another model's entry.
  EXPECT_FALSE(tier->put(make_tier_entry(kOtherModel, 8, kNoKey)));

  // Another model's bytes planted under one of this model's keys: damage.
  overwrite(5, stored_bytes(6));
  EXPECT_FALSE(tier->get(5).has_value());
  EXPECT_TRUE(quarantined(5));
}

TEST_P(PersistentTier, AnotherKvGeometryIsAMissNotDamage) {
  ASSERT_TRUE(open()->put(make_tier_entry(kModel, 5, kNoKey)));
  // Every other pair of K/V types (q8_0 and q4_0 included, K and V apart)
  // reads the f16 entry as a miss, and leaves it in place for the f16 pool.
  for (KvTypes types : {KvTypes{KvType::F32}, KvTypes{KvType::Q8_0}, KvTypes{KvType::Q8_0, KvType::F16},
                        KvTypes{KvType::F16, KvType::Q8_0}, KvTypes{KvType::Q4_0},
                        KvTypes{KvType::F16, KvType::Q4_0}, KvTypes{KvType::Fp8}}) {
    auto store = open_entry_store(spec_, options_);
    KvGeometry other_types = small_tier_geometry();
    other_types.types = types;
    StoreTier other(std::move(*store), kModel, other_types);
    EXPECT_FALSE(other.get(5).has_value()) << kv_types_text(types);
    EXPECT_FALSE(quarantined(5)) << kv_types_text(types);
  }
  EXPECT_TRUE(open()->get(5).has_value());
}

TEST_P(PersistentTier, DependentsGoWithTheirParent) {
  const std::vector<TierEntry> entries = chain(20, 4);
  const TierEntry sibling = make_tier_entry(kModel, 30, 21);  // a second child of 21
  const TierEntry unrelated = make_tier_entry(kModel, 40, kNoKey);
  auto tier = open();
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  ASSERT_TRUE(tier->put(sibling));
  ASSERT_TRUE(tier->put(unrelated));
  tier->remove(21);
  EXPECT_EQ(tier->exists(keys(entries)), 1u);
  for (BlockKey gone : {21, 22, 23, 30}) {
    EXPECT_FALSE(tier->get(gone).has_value()) << gone;
    if (disk()) {
      EXPECT_FALSE(fs::exists(file_of(gone))) << gone;
    }
  }
  EXPECT_TRUE(tier->get(40).has_value());
  EXPECT_EQ(tier->store().list().size(), 2u);
  EXPECT_EQ(tier->store().counters().dependents_removed, 3u);
}

TEST_P(PersistentTier, AChildWhoseParentIsNotStoredIsRefused) {
  auto tier = open();
  // The parent's write was dropped or refused: the child alone would be
  // unreachable and a hole in the dependency graph.
  EXPECT_FALSE(tier->put(make_tier_entry(kModel, 51, 50)));
  EXPECT_EQ(tier->store().counters().writes_refused_orphan, 1u);
  EXPECT_TRUE(tier->store().list().empty());
  if (disk()) {
    EXPECT_FALSE(fs::exists(file_of(51)));
  }
  // Parent first, then the child: both stored.
  ASSERT_TRUE(tier->put(make_tier_entry(kModel, 50, kNoKey)));
  EXPECT_TRUE(tier->put(make_tier_entry(kModel, 51, 50)));
  const BlockKey chain_keys[] = {50, 51};
  EXPECT_EQ(tier->exists(chain_keys), 2u);
  // A parent removed: its child's later write is refused too.
  tier->remove(50);
  EXPECT_FALSE(tier->put(make_tier_entry(kModel, 52, 51)));
  EXPECT_TRUE(tier->store().list().empty());
}

TEST_P(PersistentTier, AQuarantinedParentTakesItsWholeSubtree) {
  const std::vector<TierEntry> entries = chain(60, 3);
  const TierEntry sibling = make_tier_entry(kModel, 70, 60);  // a second child of the root
  auto tier = open();
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  ASSERT_TRUE(tier->put(sibling));
  overwrite(60, {});  // the root's bytes are damaged
  EXPECT_FALSE(tier->get(60).has_value());
  EXPECT_TRUE(quarantined(60));
  for (BlockKey gone : {61, 62, 70}) {
    EXPECT_FALSE(tier->get(gone).has_value()) << gone;
    EXPECT_FALSE(quarantined(gone)) << "dependents are removed, not quarantined: " << gone;
  }
  EXPECT_TRUE(tier->store().list().empty());
  EXPECT_EQ(tier->store().counters().dependents_removed, 3u);
  EXPECT_EQ(tier->quarantined_entries(), 1u);
}

TEST_P(PersistentTier, HitsReachTheIndexInOneBatchAtTheNextLookup) {
  const std::vector<TierEntry> entries = chain(80, 3);
  auto tier = open();
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->put(e));
  const auto hits_in_index = [this] {
    auto db = SqliteDb::open(db_file());
    auto s = db->prepare("SELECT SUM(hits) FROM entries");
    EXPECT_TRUE(*s->step());
    return s->column_int(0);
  };
  for (const TierEntry& e : entries) ASSERT_TRUE(tier->get(e.key).has_value());
  EXPECT_EQ(hits_in_index(), 0) << "nothing is written while a chain is read";
  EXPECT_EQ(tier->exists(keys(entries)), 3u);
  EXPECT_EQ(hits_in_index(), 3);
  // Hits still held when the store closes are written, not lost.
  ASSERT_TRUE(tier->get(80).has_value());
  tier.reset();
  EXPECT_EQ(hits_in_index(), 4);
}

INSTANTIATE_TEST_SUITE_P(Stores, PersistentTier, ::testing::Values("disk", "sqlite"), store_kind_name);

}  // namespace
}  // namespace clm::test
