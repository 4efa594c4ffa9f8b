// Probe tokens and row subsets in the forward pass (blend's two passes): a
// probe stops at the probe layer and measures how far its fresh K/V there lie
// from what its slot holds; the rows computed alongside are untouched by it;
// and recomputing a subset of a sequence's rows over stored K/V is the
// ordinary forward, bitwise the same however the subset is batched; rows
// resumed at the probe layer from their probes' residuals finish the cold run.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include "cache/block_table.h"
#include "cache/kv_pool.h"
#include "model/model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

class ForwardProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = Model::load(test::shared_file("models/stories260K.gguf"));
    ASSERT_TRUE(m) << m.error().message;
    model_ = std::move(*m);
    const ModelConfig& c = model_->config();
    g_ = KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, 16, KvType::F32};
    auto p = KvPool::create(g_, 64);
    ASSERT_TRUE(p);
    pool_ = std::move(*p);
  }
  void TearDown() override {
    for (auto& t : tables_) t.release(*pool_);
    EXPECT_EQ(pool_->n_free(), pool_->n_blocks());
  }

  std::vector<int32_t> tokens(int n, int salt) const {
    std::vector<int32_t> p;
    for (int i = 0; i < n; ++i) p.push_back(3 + (i * 31 + salt * 17) % (model_->config().n_vocab - 3));
    return p;
  }
  BlockTable& new_table(const std::vector<int32_t>& prompt) {
    tables_.emplace_back(g_.block_size);
    BlockTable& t = tables_.back();
    EXPECT_TRUE(t.reserve(*pool_, static_cast<int>(prompt.size())));
    for (std::size_t i = 0; i < prompt.size(); ++i) t.append(prompt[i], static_cast<int32_t>(i));
    return t;
  }
  // Computes every token of `table` cold, in one batch; returns the last row's logits.
  std::vector<float> compute_all(BlockTable& table) {
    Batch b;
    for (int s = 0; s < table.n_slots(); ++s)
      b.add(table.tokens()[static_cast<std::size_t>(s)], s, 0, s, s + 1 == table.n_slots());
    return run(b, table);
  }
  std::vector<float> run(const Batch& b, BlockTable& table, std::vector<float>* deviation = nullptr) {
    std::vector<float> logits(static_cast<std::size_t>(b.n_outputs() * model_->config().n_vocab));
    std::vector<float> dev(static_cast<std::size_t>(b.n_probes()));
    const KvSeqView view = table.view();
    auto ok = model_->forward(b, KvView{g_, {&view, 1}}, logits, threads_, dev);
    EXPECT_TRUE(ok) << ok.error().message;
    if (deviation) *deviation = dev;
    return logits;
  }
  // Slot `slot`'s K/V rows of `layer`, every head, as stored.
  std::vector<float> kv_row(const BlockTable& t, int layer, int slot) const {
    std::vector<float> out;
    const std::byte* block = t.view().blocks[static_cast<std::size_t>(slot / g_.block_size)];
    const std::size_t at = static_cast<std::size_t>(slot % g_.block_size) * static_cast<std::size_t>(g_.head_dim) * 4;
    for (int h = 0; h < g_.n_kv_heads; ++h)
      for (std::size_t off : {g_.k_offset(layer, h), g_.v_offset(layer, h)}) {
        const float* row = reinterpret_cast<const float*>(block + off + at);
        out.insert(out.end(), row, row + g_.head_dim);
      }
    return out;
  }
  // Copies slots [begin, end) of every layer from `from` to `to`.
  void copy_slots(const BlockTable& from, BlockTable& to, int begin, int end) const {
    for (int s = begin; s < end; ++s)
      for (int layer = 0; layer < g_.n_layers; ++layer)
        for (int h = 0; h < g_.n_kv_heads; ++h)
          for (std::size_t off : {g_.k_offset(layer, h), g_.v_offset(layer, h)}) {
            const std::size_t at =
                off + static_cast<std::size_t>(s % g_.block_size) * static_cast<std::size_t>(g_.head_dim) * 4;
            std::memcpy(to.view().blocks[static_cast<std::size_t>(s / g_.block_size)] + at,
                        from.view().blocks[static_cast<std::size_t>(s / g_.block_size)] + at,
                        static_cast<std::size_t>(g_.head_dim) * 4);
          }
  }

  std::unique_ptr<Model> model_;
  KvGeometry g_;
  std::unique_ptr<KvPool> pool_;
  ThreadPool threads_{2};
  std::deque<BlockTable> tables_;
};

TEST_F(ForwardProbe, ProbesOverTheirOwnKvMeasureZeroAndLeaveOtherRowsBitwiseAlone) {
  const auto prompt = tokens(60, 1);
  BlockTable& cold = new_table(prompt);
  const auto reference = compute_all(cold);
  BlockTable& again = new_table(prompt);
  copy_slots(cold, again, 0, 60);
  Batch b;
  for (int s = 20; s < 40; ++s) b.add_probe(prompt[static_cast<std::size_t>(s)], s, 0, s);
  b.add(prompt[59], 59, 0, 59, true);
  std::vector<float> dev;
  const auto logits = run(b, again, &dev);
  ASSERT_EQ(dev.size(), 20u);
  for (float d : dev) EXPECT_EQ(d, 0.0f);  // f32 KV: the fresh K/V is what the slot holds
  ASSERT_EQ(logits.size(), reference.size());
  EXPECT_EQ(std::memcmp(logits.data(), reference.data(), logits.size() * sizeof(float)), 0);
  for (int layer = 0; layer < g_.n_layers; ++layer)
    for (int s = 0; s < 60; ++s) ASSERT_EQ(kv_row(again, layer, s), kv_row(cold, layer, s)) << layer << " " << s;
}

TEST_F(ForwardProbe, DeviationIsTheDistanceBetweenTheStoredAndTheFreshContextsKv) {
  // The same span S after two different contexts X and Y of one length, so
  // at the same positions: a sequence holding Y's K/V, then S's from after
  // X, probes S and must find S's K/V of the cold run after Y.
  const auto x = tokens(24, 2), y = tokens(24, 3), span = tokens(20, 4);
  auto cat = [](std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  BlockTable& after_x = new_table(cat(x, span));
  BlockTable& after_y = new_table(cat(y, span));
  compute_all(after_x);
  compute_all(after_y);
  BlockTable& blended = new_table(cat(y, span));
  copy_slots(after_y, blended, 0, 24);
  copy_slots(after_x, blended, 24, 44);
  Batch b;
  for (int s = 24; s < 44; ++s) b.add_probe(span[static_cast<std::size_t>(s - 24)], s, 0, s);
  std::vector<float> dev;
  run(b, blended, &dev);
  ASSERT_EQ(dev.size(), 20u);
  double total = 0.0;
  for (int s = 24; s < 44; ++s) {
    const auto fresh = kv_row(after_y, 1, s), stored = kv_row(after_x, 1, s);
    // kv_row lists each head's K then V rows; the deviation is V's alone.
    double want = 0.0;
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      if ((i / static_cast<std::size_t>(g_.head_dim)) % 2 == 0) continue;
      const double d = static_cast<double>(fresh[i]) - stored[i];
      want += d * d;
    }
    EXPECT_NEAR(dev[static_cast<std::size_t>(s - 24)], want, 1e-6 * want + 1e-12) << "slot " << s;
    total += want;
  }
  EXPECT_GT(total, 0.0);  // the contexts differ, so the span's layer-1 K/V do
  // A probe writes layer 0 (a function of token and position alone, so
  // equal to the cold run's) and nothing from the probe layer on.
  for (int s = 24; s < 44; ++s) {
    EXPECT_EQ(kv_row(blended, 0, s), kv_row(after_y, 0, s));
    for (int layer = 1; layer < g_.n_layers; ++layer) EXPECT_EQ(kv_row(blended, layer, s), kv_row(after_x, layer, s));
  }
}

TEST_F(ForwardProbe, RecomputingARowSubsetIsTheSameInOneBatchOrOneByOne) {
  const auto prompt = tokens(50, 5);
  BlockTable& source = new_table(prompt);
  compute_all(source);
  const std::vector<int> subset{10, 11, 23, 37, 49};
  auto recompute = [&](bool together) {
    BlockTable& t = new_table(prompt);
    copy_slots(source, t, 0, 50);
    std::vector<float> out;
    Batch b;
    for (int s : subset) {
      b.add(prompt[static_cast<std::size_t>(s)], s, 0, s, true);
      if (!together) {
        const auto l = run(b, t);
        out.insert(out.end(), l.begin(), l.end());
        b.clear();
      }
    }
    if (together) out = run(b, t);
    return out;
  };
  const auto one_batch = recompute(true);
  const auto one_by_one = recompute(false);
  ASSERT_EQ(one_batch.size(), one_by_one.size());
  EXPECT_EQ(std::memcmp(one_batch.data(), one_by_one.data(), one_batch.size() * sizeof(float)), 0);
}

TEST_F(ForwardProbe, RowsResumedFromTheirProbesResidualsAreBitwiseTheColdRun) {
  // Slots 0..19 hold the cold run's K/V, slots 20..59 another text's: the
  // probes of 20..59 compute layers 0..L-1 in this context, and their rows
  // resumed at L, with one row run from layer 0 among them, finish the cold
  // run exactly.
  const auto prompt = tokens(60, 7), other = tokens(60, 8);
  BlockTable& cold = new_table(prompt);
  const auto reference = compute_all(cold);
  BlockTable& elsewhere = new_table(other);
  compute_all(elsewhere);
  BlockTable& blended = new_table(prompt);
  copy_slots(cold, blended, 0, 20);
  copy_slots(elsewhere, blended, 20, 60);
  const std::size_t E = static_cast<std::size_t>(model_->config().n_embd);
  const int layer = 2;
  ASSERT_LT(layer, model_->config().n_layers);
  Batch probes;
  probes.probe_layer = layer;
  for (int s = 20; s < 60; ++s) probes.add_probe(prompt[static_cast<std::size_t>(s)], s, 0, s);
  std::vector<float> dev(40), residual(40 * E), none;
  const KvSeqView view = blended.view();
  ASSERT_TRUE(model_->forward(probes, KvView{g_, {&view, 1}}, none, threads_, dev, residual));
  Batch second;
  second.probe_layer = layer;
  for (int s = 20; s < 60; ++s) {
    const auto at = static_cast<std::size_t>(s - 20) * E;
    if (s == 41)  // recomputed from layer 0: the same layers 0..L-1 again
      second.add(prompt[static_cast<std::size_t>(s)], s, 0, s, false);
    else
      second.add_resumed(prompt[static_cast<std::size_t>(s)], s, 0, s, s == 59,
                         std::span<const float>(residual).subspan(at, E));
  }
  const auto logits = run(second, blended);
  ASSERT_EQ(logits.size(), reference.size());
  EXPECT_EQ(std::memcmp(logits.data(), reference.data(), logits.size() * sizeof(float)), 0);
  for (int l = 0; l < g_.n_layers; ++l)
    for (int s = 0; s < 60; ++s) ASSERT_EQ(kv_row(blended, l, s), kv_row(cold, l, s)) << l << " " << s;
}

TEST_F(ForwardProbe, RejectsResumedRowsWithoutTheirResiduals) {
  const auto prompt = tokens(8, 9);
  BlockTable& t = new_table(prompt);
  const KvSeqView view = t.view();
  std::vector<float> logits(static_cast<std::size_t>(model_->config().n_vocab));
  const std::vector<float> residual(static_cast<std::size_t>(model_->config().n_embd));
  Batch short_residual;
  short_residual.add_resumed(prompt[0], 0, 0, 0, false, std::span<const float>(residual).first(1));
  EXPECT_FALSE(model_->forward(short_residual, KvView{g_, {&view, 1}}, logits, threads_));
  Batch both;
  both.add_resumed(prompt[0], 0, 0, 0, false, residual);
  both.tokens.back().probe = true;
  std::vector<float> dev(1);
  EXPECT_FALSE(model_->forward(both, KvView{g_, {&view, 1}}, logits, threads_, dev));
  Batch bad_layer;
  bad_layer.add_resumed(prompt[0], 0, 0, 0, false, residual);
  bad_layer.probe_layer = model_->config().n_layers;
  EXPECT_FALSE(model_->forward(bad_layer, KvView{g_, {&view, 1}}, logits, threads_));
  Batch probe;
  probe.add_probe(prompt[0], 0, 0, 0);
  std::vector<float> too_small(1);
  EXPECT_FALSE(model_->forward(probe, KvView{g_, {&view, 1}}, logits, threads_, dev, too_small));
}

TEST_F(ForwardProbe, RejectsProbesThatCannotBeMeasured) {
  const auto prompt = tokens(8, 6);
  BlockTable& t = new_table(prompt);
  const KvSeqView view = t.view();
  std::vector<float> logits(static_cast<std::size_t>(model_->config().n_vocab));
  std::vector<float> dev(4);
  Batch wants_logits;
  wants_logits.tokens.push_back({prompt[0], 0, 0, 0, true, true, false});
  EXPECT_FALSE(model_->forward(wants_logits, KvView{g_, {&view, 1}}, logits, threads_, dev));
  Batch bad_layer;
  bad_layer.add_probe(prompt[0], 0, 0, 0);
  bad_layer.probe_layer = model_->config().n_layers;
  EXPECT_FALSE(model_->forward(bad_layer, KvView{g_, {&view, 1}}, logits, threads_, dev));
  bad_layer.probe_layer = 0;
  EXPECT_FALSE(model_->forward(bad_layer, KvView{g_, {&view, 1}}, logits, threads_, dev));
  Batch no_room;
  no_room.add_probe(prompt[0], 0, 0, 0);
  EXPECT_FALSE(model_->forward(no_room, KvView{g_, {&view, 1}}, logits, threads_, {}));
  EXPECT_TRUE(model_->forward(no_room, KvView{g_, {&view, 1}}, logits, threads_, dev));
}

}  // namespace
}  // namespace clm
