#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/kv_row_codec.h"
#include "kernels/vec_dot.h"
#include "util/half.h"

namespace clm {
namespace {

constexpr int kLayer = 1;  // not 0, so a wrong layer offset shows

// A few physical blocks; `order` maps a sequence's logical block i to the
// physical block it occupies, so tests can lay the same sequence out
// differently in memory.
struct Arena {
  Arena(const KvGeometry& geo, std::vector<int> order) : g(geo), physical(order.size() + 1) {
    storage.assign(physical * g.block_bytes(), std::byte{0x5a});
    for (int p : order) blocks.push_back(storage.data() + static_cast<std::size_t>(p) * g.block_bytes());
  }
  KvGeometry g;
  std::size_t physical;
  std::vector<std::byte> storage;
  std::vector<std::byte*> blocks;
};

// The K/V type pairs every test runs on: each type alone, q8_0 beside f16
// each way round (the query and probability roundings follow K and V), and
// q4_0 V beside f16 and q8_0 K (the pairs docs/QUALITY.md measures).
const KvTypes kTypePairs[] = {KvType::F32,
                              KvType::F16,
                              KvType::Q8_0,
                              {KvType::Q8_0, KvType::F16},
                              {KvType::F16, KvType::Q8_0},
                              KvType::Q4_0,
                              {KvType::F16, KvType::Q4_0},
                              {KvType::Q8_0, KvType::Q4_0},
                              KvType::Fp8,
                              {KvType::F16, KvType::Fp8},
                              {KvType::Fp8, KvType::Q4_0}};

bool has_quantized(KvTypes t) { return is_quantized(t.k) || is_quantized(t.v); }

// Odd head sizes where the type allows them: q8_0 and q4_0 take a
// whole-head group below 32 (24: a tail on every path; 30 and 37 also leave
// single elements after 4-wide registers) or whole groups of 32.
std::vector<int> head_dims(KvTypes t) {
  return has_quantized(t) ? std::vector<int>{64, 24, 30} : std::vector<int>{64, 36, 37};
}

// Element d of the K (or V) row of slot s for (layer, kv head), as stored.
float stored(const KvGeometry& g, std::byte* const* blocks, bool v, int layer, int kvh, int s, int d) {
  const std::byte* row = blocks[static_cast<std::size_t>(s / g.block_size)] +
                         (v ? g.v_offset(layer, kvh) : g.k_offset(layer, kvh)) +
                         static_cast<std::size_t>(s % g.block_size) * (v ? g.v_row_bytes() : g.k_row_bytes());
  return read_kv_element(v ? g.types.v : g.types.k, row, static_cast<std::size_t>(d));
}

struct Scenario {
  KvGeometry g;
  int n_heads;
  int n_slots = 29;
  int32_t query_pos = 22;
  std::vector<int32_t> positions;
  std::vector<float> q;

  Scenario(KvTypes type, int head_dim, int ratio) {
    g = KvGeometry{2, 2, head_dim, 8, type};
    n_heads = g.n_kv_heads * ratio;
    for (int s = 0; s < n_slots; ++s) positions.push_back(s % 7 == 3 ? -1 : s);
    q = test::random_floats(static_cast<std::size_t>(n_heads) * head_dim, 21);
  }

  // Visible slots get random K/V; empty slots NaN (any use poisons the
  // result); future slots huge keys (any use dominates the softmax).
  void fill(Arena& a) const {
    const std::size_t per_token = static_cast<std::size_t>(g.n_kv_heads) * g.head_dim;
    for (int layer = 0; layer < g.n_layers; ++layer) {
      for (int s = 0; s < n_slots; ++s) {
        const unsigned seed = static_cast<unsigned>(1000 * layer + s);
        auto k = test::random_floats(per_token, seed);
        auto v = test::random_floats(per_token, seed + 500);
        if (positions[s] == -1) {
          std::fill(k.begin(), k.end(), std::numeric_limits<float>::quiet_NaN());
          std::fill(v.begin(), v.end(), std::numeric_limits<float>::quiet_NaN());
        } else if (positions[s] > query_pos) {
          std::fill(k.begin(), k.end(), 1e4f);
        }
        write_kv(k.data(), v.data(), g, layer, a.blocks[static_cast<std::size_t>(s / g.block_size)],
                 s % g.block_size);
      }
    }
  }

  std::vector<float> run(const Arena& a, float* slot_mass = nullptr) const {
    std::vector<float> out(q.size(), NAN);
    std::vector<float> scratch(static_cast<std::size_t>(n_slots + g.head_dim), NAN);
    attend_paged(q.data(), n_heads, g, kLayer, a.blocks.data(), positions.data(), n_slots, query_pos,
                 1.0f / std::sqrt(static_cast<float>(g.head_dim)), out.data(), scratch.data(), slot_mass);
    return out;
  }
};

// The reference rounds what the kernel rounds: the query to f16 against f16
// K, the probabilities to f16 against f16 V.
double as_cached(KvType t, double x) {
  return t == KvType::F16 ? static_cast<double>(f16_to_f32(f32_to_f16(static_cast<float>(x)))) : x;
}

std::vector<int> identity_order(int n) {
  std::vector<int> order;
  for (int i = 0; i < n; ++i) order.push_back(i);
  return order;
}

TEST(Attention, MatchesDoubleReferenceWithMaskingGqaAndBothKvTypes) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (KvTypes type : kTypePairs) {
      for (int head_dim : head_dims(type)) {
        for (int ratio : {1, 2, 4}) {
          const Scenario sc(type, head_dim, ratio);
          Arena arena(sc.g, identity_order(4));
          sc.fill(arena);
          std::vector<float> mass(static_cast<std::size_t>(sc.n_slots), 0.5f);
          const auto out = sc.run(arena, mass.data());

          const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
          std::vector<double> ref_mass(static_cast<std::size_t>(sc.n_slots), 0.0);
          for (int h = 0; h < sc.n_heads; ++h) {
            const int kvh = h / ratio;
            std::vector<double> score(static_cast<std::size_t>(sc.n_slots), -INFINITY);
            double max = -INFINITY;
            auto row = [&](int s, bool v, int d) {
              return static_cast<double>(stored(sc.g, arena.blocks.data(), v, kLayer, kvh, s, d));
            };
            for (int s = 0; s < sc.n_slots; ++s) {
              if (sc.positions[s] == -1 || sc.positions[s] > sc.query_pos) continue;
              double dot = 0.0;
              for (int d = 0; d < head_dim; ++d)
                dot += as_cached(type.k, sc.q[static_cast<std::size_t>(h * head_dim + d)]) * row(s, false, d);
              score[s] = dot * scale;
              max = std::fmax(max, score[s]);
            }
            double sum = 0.0;
            for (double& x : score) sum += (x = std::exp(x - max));
            for (int d = 0; d < head_dim; ++d) {
              double acc = 0.0;
              for (int s = 0; s < sc.n_slots; ++s)
                if (score[s] > 0.0) acc += as_cached(type.v, score[s] / sum) * row(s, true, d);
              ASSERT_NEAR(out[static_cast<std::size_t>(h * head_dim + d)], acc, 2e-5)
                  << kernel_path_name(path) << " " << kv_types_text(type) << " hd=" << head_dim
                  << " ratio=" << ratio << " h=" << h << " d=" << d;
            }
            for (int s = 0; s < sc.n_slots; ++s) ref_mass[s] += as_cached(type.v, score[s] / sum);
          }
          for (int s = 0; s < sc.n_slots; ++s) {
            if (sc.positions[s] == -1 || sc.positions[s] > sc.query_pos) {
              EXPECT_EQ(mass[s], 0.5f) << "masked slot " << s << " received mass";
            } else {
              EXPECT_NEAR(mass[s], 0.5 + ref_mass[s], 1e-5) << s;
            }
          }
        }
      }
    }
  }
}

TEST(Attention, ResultIsBitwiseIndependentOfWhereBlocksLie) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (KvTypes type : kTypePairs) {
      const Scenario sc(type, 64, 2);
      Arena a(sc.g, {0, 1, 2, 3});
      Arena b(sc.g, {4, 2, 0, 3});  // shuffled, one unused block of other bytes
      sc.fill(a);
      sc.fill(b);
      const auto out_a = sc.run(a);
      const auto out_b = sc.run(b);
      EXPECT_EQ(std::memcmp(out_a.data(), out_b.data(), out_a.size() * sizeof(float)), 0)
          << kernel_path_name(path);
    }
  }
}

// Heads computed one at a time, in any order, each with its own scratch (as
// the forward pass spreads a decode token's heads over threads), give bitwise
// what attend_paged gives for all heads at once.
TEST(Attention, HeadsComputedSeparatelyMatchAllAtOnce) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (KvTypes type : kTypePairs) {
      const Scenario sc(type, 64, 2);
      Arena arena(sc.g, identity_order(4));
      sc.fill(arena);
      const auto whole = sc.run(arena);
      std::vector<float> out(sc.q.size(), NAN);
      for (int h = sc.n_heads - 1; h >= 0; --h) {
        std::vector<float> scratch(static_cast<std::size_t>(sc.n_slots + sc.g.head_dim), NAN);
        attend_paged_head(sc.q.data(), sc.n_heads, h, sc.g, kLayer, arena.blocks.data(), sc.positions.data(),
                          sc.n_slots, sc.query_pos, 1.0f / std::sqrt(static_cast<float>(sc.g.head_dim)), out.data(),
                          scratch.data());
      }
      EXPECT_EQ(std::memcmp(out.data(), whole.data(), out.size() * sizeof(float)), 0) << kernel_path_name(path);
    }
  }
}

// A group of queries of one sequence gives, for each query, bitwise what
// attend_paged_head gives for it alone, whatever the group's size and the
// queries' positions (in any order, some seeing nothing, some everything).
TEST(Attention, GroupOfQueriesMatchesSingleQueryBitwise) {
  const int32_t query_positions[kMaxGroupQueries] = {22, 3, 40, -5, 10, 26, 0, 17};
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (KvTypes type : kTypePairs) {
      for (int head_dim : head_dims(type)) {
        for (int ratio : {1, 2, 4}) {
          Scenario sc(type, head_dim, ratio);
          // Positions out of slot order, and empty slots at the end too.
          for (int s = 0; s < sc.n_slots; ++s)
            sc.positions[static_cast<std::size_t>(s)] = s % 7 == 3 || s >= 26 ? -1 : (s * 11) % 29;
          sc.query_pos = 1000;  // fill: every stored slot gets ordinary K/V
          Arena arena(sc.g, identity_order(4));
          sc.fill(arena);
          const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
          const std::size_t per_q = sc.q.size();
          for (int nq = 1; nq <= kMaxGroupQueries; ++nq) {
            const auto q = test::random_floats(per_q * static_cast<std::size_t>(nq), 40u + static_cast<unsigned>(nq));
            std::vector<float> want(q.size(), NAN);
            for (int i = 0; i < nq; ++i) {
              for (int h = 0; h < sc.n_heads; ++h) {
                std::vector<float> scratch(static_cast<std::size_t>(sc.n_slots + head_dim), NAN);
                const std::size_t at = static_cast<std::size_t>(i) * per_q;
                attend_paged_head(q.data() + at, sc.n_heads, h, sc.g, kLayer, arena.blocks.data(),
                                  sc.positions.data(), sc.n_slots, query_positions[i], scale, want.data() + at,
                                  scratch.data());
              }
            }
            std::vector<float> got(q.size(), NAN);
            for (int h = 0; h < sc.n_heads; ++h) {
              std::vector<float> scratch(attend_group_scratch_floats(nq, sc.n_slots, head_dim), NAN);
              attend_paged_head_group(q.data(), per_q, nq, sc.n_heads, h, sc.g, kLayer, arena.blocks.data(),
                                      sc.positions.data(), sc.n_slots, query_positions, scale, got.data(), per_q,
                                      scratch.data());
            }
            EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
                << kernel_path_name(path) << " " << kv_types_text(type) << " head_dim " << head_dim
                << " ratio " << ratio << " queries " << nq;
          }
        }
      }
    }
  }
}

// The softmax probabilities of one query head over the slots, in double: the
// reference of the eviction statistics (q and p rounded as the kernel does).
std::vector<double> reference_probabilities(const Scenario& sc, const Arena& arena, const float* q, int head,
                                            int32_t query_pos) {
  const int hd = sc.g.head_dim;
  const int kvh = head / (sc.n_heads / sc.g.n_kv_heads);
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  std::vector<double> p(static_cast<std::size_t>(sc.n_slots), 0.0);
  double max = -INFINITY;
  std::vector<bool> seen(p.size(), false);
  for (int s = 0; s < sc.n_slots; ++s) {
    const int32_t pos = sc.positions[static_cast<std::size_t>(s)];
    if (pos == -1 || pos > query_pos) continue;
    double dot = 0.0;
    for (int d = 0; d < hd; ++d)
      dot += as_cached(sc.g.types.k, q[head * hd + d]) * stored(sc.g, arena.blocks.data(), false, kLayer, kvh, s, d);
    p[static_cast<std::size_t>(s)] = dot * scale;
    seen[static_cast<std::size_t>(s)] = true;
    max = std::fmax(max, dot * scale);
  }
  double sum = 0.0;
  for (std::size_t s = 0; s < p.size(); ++s)
    if (seen[s]) sum += (p[s] = std::exp(p[s] - max));
  for (std::size_t s = 0; s < p.size(); ++s) p[s] = seen[s] ? as_cached(sc.g.types.v, p[s] / sum) : 0.0;
  return p;
}

// A group's accumulated mass is the sum over its queries and heads of each
// query's probabilities, on every path; masked slots receive nothing; the
// outputs are bitwise those of a run without statistics.
TEST(Attention, GroupMassEqualsSumOfProbabilities) {
  const int32_t query_positions[kMaxGroupQueries] = {22, 3, 40, -5, 10, 26, 0, 17};
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (KvTypes type : kTypePairs) {
      for (int ratio : {1, 4}) {
        Scenario sc(type, head_dims(type).back(), ratio);
        for (int s = 0; s < sc.n_slots; ++s)
          sc.positions[static_cast<std::size_t>(s)] = s % 7 == 3 || s >= 26 ? -1 : (s * 11) % 29;
        sc.query_pos = 1000;
        Arena arena(sc.g, identity_order(4));
        sc.fill(arena);
        const float scale = 1.0f / std::sqrt(static_cast<float>(sc.g.head_dim));
        const std::size_t per_q = sc.q.size();
        for (int nq : {1, 3, kMaxGroupQueries}) {
          const auto q = test::random_floats(per_q * static_cast<std::size_t>(nq), 70u + static_cast<unsigned>(nq));
          std::vector<float> plain(q.size(), NAN), with(q.size(), NAN);
          std::vector<float> mass(static_cast<std::size_t>(sc.n_slots), 0.25f);
          std::vector<double> ref(mass.size(), 0.25);
          for (int h = 0; h < sc.n_heads; ++h) {
            std::vector<float> scratch(attend_group_scratch_floats(nq, sc.n_slots, sc.g.head_dim), NAN);
            attend_paged_head_group(q.data(), per_q, nq, sc.n_heads, h, sc.g, kLayer, arena.blocks.data(),
                                    sc.positions.data(), sc.n_slots, query_positions, scale, plain.data(), per_q,
                                    scratch.data());
            attend_paged_head_group(q.data(), per_q, nq, sc.n_heads, h, sc.g, kLayer, arena.blocks.data(),
                                    sc.positions.data(), sc.n_slots, query_positions, scale, with.data(), per_q,
                                    scratch.data(), mass.data());
            for (int i = 0; i < nq; ++i) {
              const auto p = reference_probabilities(sc, arena, q.data() + static_cast<std::size_t>(i) * per_q, h,
                                                     query_positions[i]);
              for (std::size_t s = 0; s < ref.size(); ++s) ref[s] += p[s];
            }
          }
          EXPECT_EQ(std::memcmp(plain.data(), with.data(), plain.size() * sizeof(float)), 0)
              << kernel_path_name(path) << ": statistics changed an output";
          for (std::size_t s = 0; s < mass.size(); ++s) {
            if (sc.positions[s] == -1) {
              EXPECT_EQ(mass[s], 0.25f) << "empty slot " << s << " received mass";
            } else {
              EXPECT_NEAR(mass[s], ref[s], 2e-5) << kernel_path_name(path) << " " << kv_types_text(type)
                                                 << " ratio " << ratio << " queries " << nq << " slot " << s;
            }
          }
        }
      }
    }
  }
}

// Every f16 bit pattern converts as f16_to_f32 does, on every path and with
// any tail length.
TEST(Attention, F16RowConversionIsExactOnEveryPath) {
  std::vector<uint16_t> all(65536 + 5);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  for (KernelPath path : test::supported_paths()) {
    for (std::size_t n : {all.size(), std::size_t{7}, std::size_t{36}, std::size_t{64}}) {
      std::vector<float> got(n, -7.0f);
      vec_kernels(path).f16_to_f32_row(reinterpret_cast<const std::byte*>(all.data()), got.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        const float want = f16_to_f32(all[i]);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got[i])) << kernel_path_name(path) << " " << all[i];
        } else {
          ASSERT_EQ(std::memcmp(&got[i], &want, 4), 0) << kernel_path_name(path) << " " << all[i];
        }
      }
    }
  }
}

TEST(Attention, QueryThatSeesNothingGetsZeros) {
  Scenario sc(KvType::F16, 64, 2);
  Arena arena(sc.g, identity_order(4));
  sc.fill(arena);
  sc.query_pos = -5;
  for (float v : sc.run(arena)) EXPECT_EQ(v, 0.0f);
}

TEST(Attention, WriteKvStoresEachHeadAtItsOffsetOnly) {
  for (KvTypes type : kTypePairs) {
    const KvGeometry g{3, 2, 16, 8, type};
    std::vector<std::byte> block(g.block_bytes(), std::byte{0xab});
    const auto k = test::random_floats(2 * 16, 31);
    const auto v = test::random_floats(2 * 16, 32);
    write_kv(k.data(), v.data(), g, 1, block.data(), 5);
    std::size_t changed = 0;
    for (std::byte b : block) changed += b != std::byte{0xab};
    const std::size_t written = 2 * (g.k_row_bytes() + g.v_row_bytes());
    EXPECT_LE(changed, written);
    EXPECT_GE(changed, written * 9 / 10);  // a byte may coincide with the fill
    for (int h = 0; h < 2; ++h) {
      // What the codec stores for this head's values, read back.
      std::vector<std::byte> row(std::max(g.k_row_bytes(), g.v_row_bytes()));
      std::vector<float> want_k(16), want_v(16);
      encode_kv_row(type.k, k.data() + h * 16, 16, row.data());
      decode_kv_row(type.k, row.data(), 16, want_k.data());
      encode_kv_row(type.v, v.data() + h * 16, 16, row.data());
      decode_kv_row(type.v, row.data(), 16, want_v.data());
      std::byte* const blocks[1] = {block.data()};
      for (int d = 0; d < 16; ++d) {
        EXPECT_EQ(stored(g, blocks, false, 1, h, 5, d), want_k[static_cast<std::size_t>(d)]) << kv_types_text(type);
        EXPECT_EQ(stored(g, blocks, true, 1, h, 5, d), want_v[static_cast<std::size_t>(d)]) << kv_types_text(type);
      }
    }
  }
}

// The attention of the SIMD paths against the scalar reference, on the same
// stored K/V: close, not necessarily bitwise.
TEST(Attention, SimdPathsAgreeWithScalar) {
  for (KvTypes type : kTypePairs) {
    const Scenario sc(type, head_dims(type).back(), 4);
    Arena arena(sc.g, identity_order(4));
    sc.fill(arena);
    std::vector<float> scalar;
    {
      test::ScopedKernelPath scoped(KernelPath::Scalar);
      scalar = sc.run(arena);
    }
    for (KernelPath path : test::supported_paths()) {
      test::ScopedKernelPath scoped(path);
      const auto out = sc.run(arena);
      for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], scalar[i], 1e-5) << kernel_path_name(path);
    }
  }
}

}  // namespace
}  // namespace clm
