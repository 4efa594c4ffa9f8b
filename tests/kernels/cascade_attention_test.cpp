// Cascade attention (attention.h) against each query attending alone through
// the scalar reference kernels: queries of different sequences that share
// none, some or all of their leading blocks, on every kernel path, f16 and
// f32 caches, with masked, empty and future slots, must give bitwise the same
// outputs and slot masses.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/attention.h"

namespace clm {
namespace {

constexpr int kLayer = 1;
constexpr int kBlock = 8;

// Physical blocks every sequence draws from; a block's K/V depend only on the
// block and row, so a block shared by two sequences holds one content.
struct Pool {
  Pool(const KvGeometry& geo, int n) : g(geo), storage(static_cast<std::size_t>(n) * geo.block_bytes()) {
    const std::size_t per_token = static_cast<std::size_t>(g.n_kv_heads) * g.head_dim;
    for (int b = 0; b < n; ++b) {
      for (int layer = 0; layer < g.n_layers; ++layer) {
        for (int r = 0; r < kBlock; ++r) {
          const unsigned seed = static_cast<unsigned>(10000 * b + 100 * layer + r);
          const auto k = test::random_floats(per_token, seed);
          const auto v = test::random_floats(per_token, seed + 50);
          write_kv(k.data(), v.data(), g, layer, block(b), r);
        }
      }
    }
  }
  std::byte* block(int b) { return storage.data() + static_cast<std::size_t>(b) * g.block_bytes(); }
  KvGeometry g;
  std::vector<std::byte> storage;
};

struct Seq {
  std::vector<std::byte*> blocks;
  std::vector<int32_t> positions;
  int32_t pos;
};

// A sequence over the given physical blocks: natural positions, with the last
// `empty` slots unfilled and every 9th own slot (past `shared`) empty too.
Seq make_seq(Pool& pool, std::vector<int> physical, int n_slots, int shared, int32_t query_pos) {
  Seq s;
  for (int b : physical) s.blocks.push_back(pool.block(b));
  for (int i = 0; i < n_slots; ++i) s.positions.push_back(i >= shared && i % 9 == 4 ? -1 : i);
  s.pos = query_pos;
  return s;
}

TEST(CascadeAttention, EachQueryBitwiseAsIfAlone) {
  for (KernelPath path : test::supported_paths()) {
    test::ScopedKernelPath scoped(path);
    for (KvType type : {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0, KvType::Fp8}) {
      // Head size 40 (q8_0, q4_0: 24, a one-group head with a tail) takes
      // the kernels' general loops, 64 their unrolled ones; 37 (q8_0, q4_0:
      // 30) leaves single elements after the registers of every path's width.
      const int odd = is_quantized(type) ? 24 : 40;
      const int odder = is_quantized(type) ? 30 : 37;
      for (auto [ratio, head_dim] :
           {std::pair{1, odd}, std::pair{4, odd}, std::pair{4, 64}, std::pair{2, odder}}) {
        const KvGeometry g{2, 2, head_dim, kBlock, type};
        const int n_heads = g.n_kv_heads * ratio;
        Pool pool(g, 16);
        // Blocks 0-2 are a common prefix of the first sequences (24 slots).
        std::vector<Seq> seqs;
        seqs.push_back(make_seq(pool, {0, 1, 2, 3, 4}, 37, 24, 36));
        seqs.push_back(make_seq(pool, {0, 1, 2, 5}, 29, 24, 28));
        seqs.push_back(make_seq(pool, {0, 1, 2}, 24, 24, 30));       // all of it shared
        seqs.push_back(make_seq(pool, {0, 1, 2, 6, 7}, 40, 24, 20));  // sees part of its slots only
        seqs.push_back(make_seq(pool, {0, 1, 2, 8}, 32, 24, 5));      // sees only shared slots
        // Enough queries to fill several register tiles and leave remainders:
        // the same five sequences again, with other queries.
        for (std::size_t i = 5; i < static_cast<std::size_t>(kMaxCascadeQueries); ++i) seqs.push_back(seqs[i % 5]);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        const std::size_t per_q = static_cast<std::size_t>(n_heads) * g.head_dim;
        for (int shared : {0, 8, 24}) {
          // Every query count: each register tile shape and remainder.
          for (int nq = 1; nq <= kMaxCascadeQueries; ++nq) {
            const auto q = test::random_floats(per_q * static_cast<std::size_t>(nq), 90u + static_cast<unsigned>(nq));
            std::vector<float> want(q.size(), NAN), got(q.size(), NAN);
            std::vector<std::vector<float>> want_mass, got_mass;
            for (int i = 0; i < nq; ++i) {
              want_mass.emplace_back(seqs[static_cast<std::size_t>(i)].positions.size(), 0.5f);
              got_mass.push_back(want_mass.back());
            }
            std::vector<CascadeQuery> queries;
            for (int i = 0; i < nq; ++i) {
              Seq& s = seqs[static_cast<std::size_t>(i)];
              const std::size_t at = static_cast<std::size_t>(i) * per_q;
              const int n_slots = static_cast<int>(s.positions.size());
              const test::ScopedKernelPath reference(KernelPath::Scalar);
              for (int h = 0; h < n_heads; ++h) {
                std::vector<float> scratch(static_cast<std::size_t>(n_slots + g.head_dim), NAN);
                attend_paged_head(q.data() + at, n_heads, h, g, kLayer, s.blocks.data(), s.positions.data(), n_slots,
                                  s.pos, scale, want.data() + at, scratch.data(),
                                  want_mass[static_cast<std::size_t>(i)].data());
              }
              queries.push_back({q.data() + at, got.data() + at, s.blocks.data(), s.positions.data(), n_slots, s.pos,
                                 got_mass[static_cast<std::size_t>(i)].data()});
            }
            for (int h = 0; h < n_heads; ++h) {  // masses add up head by head, as alone
              std::vector<float> scratch(attend_group_scratch_floats(nq, 40, g.head_dim), NAN);
              attend_paged_head_cascade(queries.data(), nq, shared, n_heads, h, g, kLayer, scale, scratch.data());
            }
            const std::string where = std::string(kernel_path_name(path)) + " " + std::string(kv_type_name(type)) +
                                      " ratio " + std::to_string(ratio) +
                                      " head_dim " + std::to_string(head_dim) +
                                      " shared " + std::to_string(shared) + " queries " + std::to_string(nq);
            ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << where;
            for (int i = 0; i < nq; ++i) {
              const auto& w = want_mass[static_cast<std::size_t>(i)];
              const auto& gm = got_mass[static_cast<std::size_t>(i)];
              ASSERT_EQ(std::memcmp(gm.data(), w.data(), w.size() * sizeof(float)), 0) << where << " mass " << i;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace clm
