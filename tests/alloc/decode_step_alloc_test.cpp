// A steady decode step allocates no heap memory: the model's forward pass
// over a batch of decoding rows (on every attention path: cascades over a
// shared prefix, split by head, one thread) and the scheduler's whole step
// (batch building, forward, sampling on the pool, callbacks), counted after
// a warm-up with this binary's replaced operator new.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "alloc/heap_counter.h"
#include "cache/kv_pool.h"
#include "engine/scheduler_rig.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "support/test_paths.h"
#include "util/thread_pool.h"

namespace clm {
namespace {

Model& q8_model() {
  static std::unique_ptr<Model> m = [] {
    SyntheticModelSpec s;
    s.weight_type = WeightType::Q8_0;
    s.n_kv_heads = 2;
    const std::string path = test::temp_dir() + "/alloc_synthetic.gguf";
    EXPECT_TRUE(write_synthetic_model(s, path));
    auto r = Model::load(path);
    EXPECT_TRUE(r) << r.error().message;
    return r ? std::move(*r) : nullptr;
  }();
  return *m;
}

TEST(HeapCounter, SeesAllocationsOnTheCallerAndOnPoolThreads) {
  test::start_counting_allocations();
  auto v = std::make_unique<std::vector<int>>(10);
  EXPECT_GE(test::stop_counting_allocations(), 2u);
  ThreadPool pool(3);
  std::vector<std::unique_ptr<int>> made(64);
  test::start_counting_allocations();
  pool.parallel_for(made.size(), [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) made[i] = std::make_unique<int>(static_cast<int>(i));
  });
  EXPECT_EQ(test::stop_counting_allocations(), made.size());
}

// Sequences sharing one prefix block, each with blocks of its own, decoding
// one token per step through Model::forward directly.
class DecodingSequences {
 public:
  static constexpr int kBlock = 16, kOwnBlocks = 3, kOwnPrompt = 8;

  DecodingSequences(Model& m, int n_seqs) : model_(m) {
    const ModelConfig& c = m.config();
    auto p = KvPool::create(KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, kBlock, KvType::F16},
                            static_cast<std::size_t>(1 + n_seqs * kOwnBlocks));
    EXPECT_TRUE(p) << p.error().message;
    pool_ = std::move(*p);
    const BlockId shared = pool_->allocate();
    blocks_.resize(static_cast<std::size_t>(n_seqs));
    positions_.resize(static_cast<std::size_t>(n_seqs));
    length_.assign(static_cast<std::size_t>(n_seqs), 0);
    for (int s = 0; s < n_seqs; ++s) {
      blocks_[s].push_back(pool_->block_data(shared));
      for (int b = 0; b < kOwnBlocks; ++b) blocks_[s].push_back(pool_->block_data(pool_->allocate()));
      positions_[s].assign(static_cast<std::size_t>((1 + kOwnBlocks) * kBlock), kEmptySlot);
      views_.push_back({blocks_[s], positions_[s]});
    }
    logits_.resize(static_cast<std::size_t>(n_seqs) * static_cast<std::size_t>(c.n_vocab));
  }

  // The shared prefix block (computed by sequence 0, seen by all), then each
  // sequence's own prompt.
  void prefill(ThreadPool& threads) {
    batch_.tokens.clear();
    for (int i = 0; i < kBlock; ++i) append(0, 3 + i);
    for (std::size_t s = 1; s < positions_.size(); ++s) {
      for (int i = 0; i < kBlock; ++i) positions_[s][static_cast<std::size_t>(i)] = i;
      length_[s] = kBlock;
    }
    forward(threads);
    batch_.tokens.clear();
    for (std::size_t s = 0; s < positions_.size(); ++s)
      for (int i = 0; i < kOwnPrompt; ++i) append(static_cast<int32_t>(s), 5 + 7 * static_cast<int>(s) + i);
    forward(threads);
  }

  // One token per sequence, every row wanting logits.
  void decode_step(ThreadPool& threads) {
    batch_.tokens.clear();
    for (std::size_t s = 0; s < positions_.size(); ++s) append(static_cast<int32_t>(s), 11 + length_[s] % 100, true);
    forward(threads);
  }

 private:
  void append(int32_t seq, int32_t token, bool want_logits = false) {
    const int32_t pos = length_[static_cast<std::size_t>(seq)]++;
    positions_[static_cast<std::size_t>(seq)][static_cast<std::size_t>(pos)] = pos;
    batch_.add(token, pos, seq, pos, want_logits);
  }
  void forward(ThreadPool& threads) {
    const KvView view{pool_->geometry(), views_};
    const Status ok = model_.forward(batch_, view, logits_, threads);
    EXPECT_TRUE(ok) << ok.error().message;
  }

  Model& model_;
  std::unique_ptr<KvPool> pool_;
  std::vector<std::vector<std::byte*>> blocks_;
  std::vector<std::vector<int32_t>> positions_;
  std::vector<int32_t> length_;
  std::vector<KvSeqView> views_;
  std::vector<float> logits_;
  Batch batch_;
};

TEST(DecodeStepAllocations, ModelForwardOverDecodingRowsAllocatesNothing) {
  // 8 rows: with 2 threads they attend in cascades over the shared block,
  // with 3 split by head, with 1 in groups on the calling thread.
  for (int n_threads : {2, 3, 1}) {
    ThreadPool threads(n_threads);
    DecodingSequences seqs(q8_model(), 8);
    seqs.prefill(threads);
    for (int i = 0; i < 2; ++i) seqs.decode_step(threads);  // warm-up: scratch reaches its size
    test::start_counting_allocations();
    for (int i = 0; i < 4; ++i) seqs.decode_step(threads);
    EXPECT_EQ(test::stop_counting_allocations(), 0u) << n_threads << " threads";
  }
}

// The scheduler's whole step, decoding six sequences, greedy and seeded,
// inside one block (a sequence that reaches a
// new block takes it from the pool and extends its block table).
TEST(DecodeStepAllocations, SchedulerDecodeStepAllocatesNothing) {
  for (int n_threads : {2, 1}) {
    test::RigOptions o;
    o.threads = n_threads;
    o.block_size = 256;
    o.n_blocks = 16;
    test::Rig rig(q8_model(), o);
    const int vocab = q8_model().config().n_vocab;
    std::size_t tokens = 0;
    for (int i = 0; i < 6; ++i) {
      Request r;
      r.prompt = test::prompt_of(40, 0, vocab);  // a common start...
      for (int k = 0; k < 30; ++k) r.prompt.push_back(3 + (k * 13 + i * 29) % (vocab - 3));  // ...then its own
      r.max_tokens = 100;
      r.stop_at_end_of_generation = false;
      r.sampler.seed = 7 + static_cast<uint64_t>(i);
      if (i % 2 == 0) r.sampler.temperature = 0.0f;
      auto id = rig.scheduler->submit(std::move(r), [&tokens](const TokenEvent&) { return ++tokens > 0; }, nullptr);
      ASSERT_TRUE(id) << id.error().message;
    }
    // Admission and the prompts (70 tokens), then a few decode steps to
    // warm up; then enough steps that vectors growing by a token a step
    // (a history, a block table) would have to grow past their capacity.
    while (tokens < 6 * 4) ASSERT_TRUE(rig.scheduler->step());
    const std::size_t before = tokens;
    constexpr int kSteps = 80;
    test::start_counting_allocations();
    for (int i = 0; i < kSteps; ++i) rig.scheduler->step();
    const std::size_t allocations = test::stop_counting_allocations();
    EXPECT_EQ(tokens - before, 6u * kSteps) << "every step decodes every sequence";
    EXPECT_EQ(allocations, 0u) << n_threads << " threads";
    rig.scheduler->run_until_idle();
  }
}

}  // namespace
}  // namespace clm
