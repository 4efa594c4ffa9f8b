// Cascade attention in the forward pass: sequences whose block tables start
// with the same blocks (conversations over one system prompt) are attended
// together over those blocks. Each sequence's logits must stay bitwise what it
// gets alone, with decode rows and prefill chunks mixed in one batch, on every
// kernel path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cache/block_table.h"
#include "cache/kv_pool.h"
#include "kernels/kernel_test_support.h"
#include "model/attention_groups.h"
#include "model/model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

constexpr int kBlock = 16;
constexpr int kPrefix = 40;  // 2 whole shared blocks and 8 slots of a third

struct Conversation {
  std::vector<int32_t> tokens;  // its own tokens after the shared prefix
  int chunk;                    // tokens it takes per step (1: decode-like)
};

class CascadeForward : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = Model::load(test::shared_file("models/stories260K.gguf"));
    ASSERT_TRUE(m) << m.error().message;
    model_ = std::move(*m);
    const ModelConfig& c = model_->config();
    g_ = KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, kBlock, KvType::F16};
    auto p = KvPool::create(g_, 128);
    ASSERT_TRUE(p);
    pool_ = std::move(*p);
    // The shared prefix, computed once.
    for (int i = 0; i < kPrefix; ++i) prefix_.push_back(i == 0 ? 1 : 5 + (i * 29) % 400);
    ASSERT_TRUE(prefix_table_.reserve(*pool_, kPrefix));
    Batch b;
    for (int i = 0; i < kPrefix; ++i) b.add(prefix_[i], i, 0, prefix_table_.append(prefix_[i], i), false);
    std::vector<KvSeqView> views{prefix_table_.view()};
    ThreadPool tp(1);
    ASSERT_TRUE(model_->forward(b, KvView{g_, views}, {}, tp));
  }
  void TearDown() override { prefix_table_.release(*pool_); }

  // A table holding the prefix's whole blocks (shared) and a copy of its
  // partial last block's slots as its own.
  BlockTable fork() {
    BlockTable t(kBlock);
    const int whole = kPrefix / kBlock;
    for (int b = 0; b < whole; ++b) {
      const BlockId id = prefix_table_.blocks()[static_cast<std::size_t>(b)];
      pool_->retain(id);
      t.push_block(id, pool_->block_data(id));
    }
    for (int i = 0; i < whole * kBlock; ++i) t.append(prefix_[i], i);
    EXPECT_TRUE(t.reserve(*pool_, kPrefix - whole * kBlock));
    const std::byte* src = pool_->block_data(prefix_table_.blocks()[static_cast<std::size_t>(whole)]);
    std::memcpy(pool_->block_data(t.blocks().back()), src, g_.block_bytes());
    for (int i = whole * kBlock; i < kPrefix; ++i) t.append(prefix_[i], i);
    return t;
  }

  // Runs the conversations together (or each alone), chunk by chunk; returns
  // the logits of every chunk's last token, per conversation.
  std::vector<std::vector<float>> run(const std::vector<Conversation>& convs, bool together, int threads) {
    ThreadPool tp(threads);
    std::vector<std::vector<float>> out(convs.size());
    std::vector<BlockTable> tables;
    for (std::size_t i = 0; i < convs.size(); ++i) tables.push_back(fork());
    std::vector<int> done(convs.size(), 0);
    const int n_vocab = model_->config().n_vocab;
    for (;;) {
      Batch batch;
      std::vector<KvSeqView> views;
      std::vector<std::size_t> owner;
      for (std::size_t i = 0; i < convs.size(); ++i) {
        const int left = static_cast<int>(convs[i].tokens.size()) - done[i];
        if (left == 0) continue;
        if (!together && !views.empty()) break;
        const int n = std::min(left, convs[i].chunk);
        EXPECT_TRUE(tables[i].reserve(*pool_, n));
        for (int k = 0; k < n; ++k) {
          const int32_t tok = convs[i].tokens[static_cast<std::size_t>(done[i] + k)];
          const int32_t pos = kPrefix + done[i] + k;
          batch.add(tok, pos, static_cast<int32_t>(views.size()), tables[i].append(tok, pos), k == n - 1);
        }
        done[i] += n;
        owner.push_back(i);
        views.push_back(tables[i].view());
      }
      if (batch.empty()) break;
      std::vector<float> logits(owner.size() * static_cast<std::size_t>(n_vocab));
      EXPECT_TRUE(model_->forward(batch, KvView{g_, views}, logits, tp));
      for (std::size_t o = 0; o < owner.size(); ++o)
        out[owner[o]].insert(out[owner[o]].end(), logits.begin() + static_cast<long>(o * n_vocab),
                             logits.begin() + static_cast<long>((o + 1) * n_vocab));
    }
    for (auto& t : tables) t.release(*pool_);
    return out;
  }

  std::unique_ptr<Model> model_;
  KvGeometry g_;
  std::unique_ptr<KvPool> pool_;
  BlockTable prefix_table_{kBlock};
  std::vector<int32_t> prefix_;
};

TEST_F(CascadeForward, SharedPrefixSequencesDecodeTogetherBitwiseAsAlone) {
  std::vector<Conversation> convs;
  for (int i = 0; i < 13; ++i) {
    Conversation c;
    for (int k = 0; k < 6 + i % 5; ++k) c.tokens.push_back(7 + (i * 53 + k * 17) % 480);
    c.chunk = i % 4 == 3 ? 3 : 1;  // most decode a token a step; some prefill chunks in between
    convs.push_back(c);
  }
  for (KernelPath path : test::supported_paths()) {
    const test::ScopedKernelPath scoped(path);
    const auto alone = run(convs, /*together=*/false, 1);
    for (int threads : {1, 2}) {
      const auto together = run(convs, /*together=*/true, threads);
      for (std::size_t i = 0; i < convs.size(); ++i) {
        ASSERT_EQ(together[i].size(), alone[i].size());
        EXPECT_EQ(std::memcmp(together[i].data(), alone[i].data(), alone[i].size() * sizeof(float)), 0)
            << kernel_path_name(path) << ", conversation " << i << ", " << threads << " threads";
      }
    }
  }
  EXPECT_EQ(pool_->n_free() + kPrefix / kBlock + 1, pool_->n_blocks());
}

// The grouping itself: decode rows over the same leading blocks become
// cascades of at most kMaxGroupQueries, sharing exactly the common whole
// blocks; with statistics wanted, nothing is merged.
TEST_F(CascadeForward, DecodeRowsOverOneSharedPrefixFormCascades) {
  std::vector<BlockTable> tables;
  std::vector<KvSeqView> views;
  Batch batch;
  for (int i = 0; i < 11; ++i) {
    tables.push_back(fork());
    ASSERT_TRUE(tables.back().reserve(*pool_, 1));
  }
  BlockTable lone(kBlock);  // shares nothing
  ASSERT_TRUE(lone.reserve(*pool_, 3));
  for (int i = 0; i < 2; ++i) lone.append(9, i);
  for (std::size_t i = 0; i < tables.size(); ++i) {
    batch.add(11, kPrefix, static_cast<int32_t>(i), tables[i].append(11, kPrefix), true);
    views.push_back(tables[i].view());
  }
  batch.add(12, 2, static_cast<int32_t>(views.size()), lone.append(12, 2), true);
  views.push_back(lone.view());
  std::vector<AttentionGroup> groups;
  arrange_attention_groups(batch.tokens, KvView{g_, views}, true, groups);
  ASSERT_EQ(groups.size(), 3u);
  std::vector<int> sizes;
  for (const auto& grp : groups) {
    sizes.push_back(grp.n_rows);
    if (grp.n_rows > 1) {
      EXPECT_EQ(grp.shared_slots, 2 * kBlock);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int>{1, 3, 8}));
  // Up to kMaxCascadeQueries when the caller allows it: all eleven at once.
  arrange_attention_groups(batch.tokens, KvView{g_, views}, true, groups, kMaxCascadeQueries);
  sizes.clear();
  for (const auto& grp : groups) sizes.push_back(grp.n_rows);
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<int>{1, 11}));
  arrange_attention_groups(batch.tokens, KvView{g_, views}, false, groups);
  EXPECT_EQ(groups.size(), 12u);
  for (auto& t : tables) t.release(*pool_);
  lone.release(*pool_);
}

}  // namespace
}  // namespace clm
