// DESIGN promise 1 at the forward-pass level: a token's logits are bitwise
// identical however the prompt is chunked and whatever else shares its batch.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cache/block_table.h"
#include "cache/kv_pool.h"
#include "model/fingerprint.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

struct Seq {
  std::vector<int32_t> tokens;
  BlockTable table;
  int done = 0;  // tokens already computed
};

// Runs every sequence to its end, each step taking up to `chunk` tokens of
// every unfinished sequence into one batch. Returns the last-token logits of
// each sequence.
std::vector<std::vector<float>> run(Model& model, KvType kv, std::vector<std::vector<int32_t>> prompts, int chunk,
                                    int threads) {
  const ModelConfig& c = model.config();
  KvGeometry g{c.n_layers, c.n_kv_heads, c.head_dim, 32, kv};
  auto pool = KvPool::create(g, 64);
  EXPECT_TRUE(pool);
  ThreadPool tp(threads);
  std::vector<Seq> seqs(prompts.size());
  std::vector<std::vector<float>> last(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) seqs[i].tokens = prompts[i];
  for (;;) {
    Batch batch;
    std::vector<KvSeqView> views;
    std::vector<std::size_t> out_seq;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      Seq& s = seqs[i];
      const int n = std::min(chunk, static_cast<int>(s.tokens.size()) - s.done);
      if (n <= 0) continue;
      EXPECT_TRUE(s.table.reserve(**pool, n));
      const int seq_index = static_cast<int>(views.size());
      for (int k = 0; k < n; ++k) {
        const int pos = s.done + k;
        const bool is_last = pos + 1 == static_cast<int>(s.tokens.size());
        batch.add(s.tokens[static_cast<std::size_t>(pos)], pos, seq_index, s.table.append(s.tokens[static_cast<std::size_t>(pos)], pos), is_last);
        if (is_last) out_seq.push_back(i);
      }
      s.done += n;
      views.push_back(s.table.view());
    }
    if (batch.empty()) break;
    std::vector<float> logits(static_cast<std::size_t>(batch.n_outputs()) * static_cast<std::size_t>(c.n_vocab));
    auto ok = model.forward(batch, KvView{g, views}, logits, tp);
    EXPECT_TRUE(ok);
    for (std::size_t o = 0; o < out_seq.size(); ++o)
      last[out_seq[o]].assign(logits.begin() + static_cast<long>(o * c.n_vocab),
                              logits.begin() + static_cast<long>((o + 1) * c.n_vocab));
  }
  for (auto& s : seqs) s.table.release(**pool);
  EXPECT_EQ((*pool)->n_free(), (*pool)->n_blocks());
  return last;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<int32_t> prompt_of(int n, int salt, int vocab) {
  std::vector<int32_t> p{1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt * 11) % (vocab - 3));
  return p;
}

void check_invariance(Model& model, KvType kv) {
  const int vocab = model.config().n_vocab;
  const auto prompt = prompt_of(77, 0, vocab);
  const auto reference = run(model, kv, {prompt}, 1000, 1)[0];
  for (int chunk : {1, 7, 32}) {
    EXPECT_TRUE(bitwise_equal(run(model, kv, {prompt}, chunk, 1)[0], reference)) << "chunk " << chunk;
  }
  EXPECT_TRUE(bitwise_equal(run(model, kv, {prompt}, 1000, 2)[0], reference)) << "2 threads";
  // 8 sequences of different lengths in the same batches.
  std::vector<std::vector<int32_t>> prompts{prompt};
  for (int s = 1; s < 8; ++s) prompts.push_back(prompt_of(5 + 13 * s, s, vocab));
  for (int chunk : {7, 1000}) {
    const auto together = run(model, kv, prompts, chunk, 2);
    EXPECT_TRUE(bitwise_equal(together[0], reference)) << "batched with others, chunk " << chunk;
    for (std::size_t s = 1; s < prompts.size(); ++s)
      EXPECT_TRUE(bitwise_equal(together[s], run(model, kv, {prompts[s]}, 1000, 1)[0])) << "seq " << s;
  }
}

TEST(ForwardInvariance, RealModelIsBatchAndChunkInvariant) {
  auto model = Model::load(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(model) << model.error().message;
  check_invariance(**model, KvType::F16);
  check_invariance(**model, KvType::F32);
}

TEST(ForwardInvariance, WeightsFromTheMapAndFromACopyGiveTheSameLogits) {
  const std::string path = test::shared_file("models/stories260K.gguf");
  LoadOptions map;
  map.load = FileLoad::Map;
  auto mapped = Model::load(path, map);
  auto copied = Model::load(path);  // the default: a private copy
  ASSERT_TRUE(mapped && copied);
  EXPECT_EQ((*mapped)->file().load(), FileLoad::Map);
  EXPECT_EQ((*copied)->file().load(), FileLoad::Copy);
  EXPECT_NE((*mapped)->file().bytes().data(), (*copied)->file().bytes().data());
  const auto prompt = prompt_of(40, 3, (*mapped)->config().n_vocab);
  EXPECT_TRUE(bitwise_equal(run(**mapped, KvType::F16, {prompt}, 1000, 1)[0],
                            run(**copied, KvType::F16, {prompt}, 1000, 1)[0]));
}

// Resident pages of `bytes` at p (mincore).
std::size_t resident_pages(const std::byte* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  std::vector<unsigned char> in((end - begin + page - 1) / page);
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(begin), end - begin, in.data()), 0);
  return static_cast<std::size_t>(std::count_if(in.begin(), in.end(), [](unsigned char c) { return c & 1; }));
}

// The F16 / BF16 matrices are multiplied from their panels, so the file's
// copy of their bytes can be given back as they are packed: the logits stay
// bitwise the same, the memory leaves the process, the fingerprint is taken
// from the bytes before they go, and the embedding's rows (looked up from the
// file, tied to the output or not) stay.
TEST(ForwardInvariance, ReleasingThePackedMatricesFileBytesChangesNoLogit) {
  for (WeightType t : {WeightType::F16, WeightType::BF16}) {
    for (bool tied : {false, true}) {
      for (FileLoad load : {FileLoad::Copy, FileLoad::Map}) {
        SyntheticModelSpec s;
        s.weight_type = t;
        s.tied_output = tied;
        s.n_embd = 256;
        s.n_ff = 512;
        s.n_heads = 4;
        s.n_kv_heads = 2;
        const std::string path = test::temp_dir() + "/m.gguf";
        ASSERT_TRUE(write_synthetic_model(s, path));
        LoadOptions keep;
        keep.load = load;
        LoadOptions give_back = keep;
        give_back.release_packed_file_bytes = true;
        auto kept = Model::load(path, keep);
        auto released = Model::load(path, give_back);
        ASSERT_TRUE(kept && released);
        const std::string what = std::string(weight_type_name(t)) + (tied ? " tied" : "") +
                                 (load == FileLoad::Map ? " map" : " copy");
        EXPECT_FALSE((*kept)->fingerprint()) << what;
        ASSERT_TRUE((*released)->fingerprint()) << what;
        EXPECT_EQ(*(*released)->fingerprint(), model_fingerprint((*kept)->file())) << what;
        const auto prompt = prompt_of(40, 5, (*kept)->config().n_vocab);
        EXPECT_TRUE(bitwise_equal(run(**released, KvType::F16, {prompt}, 1000, 1)[0],
                                  run(**kept, KvType::F16, {prompt}, 1000, 1)[0]))
            << what;
        const WeightMatrix& w_up = (*released)->weights().layers[0].w_up;
        const std::size_t w_up_bytes = static_cast<std::size_t>(w_up.rows) * w_up.row_bytes;
        // (mincore reports a mapped file's page cache, which the map keeps.)
        if (load == FileLoad::Copy) {
          EXPECT_LE(resident_pages(w_up.data, w_up_bytes), 2u) << what << ": at most the pages it shares at its ends";
          EXPECT_GT(resident_pages((*kept)->weights().layers[0].w_up.data, w_up_bytes), 2u) << what;
        }
        const WeightMatrix& embd = (*released)->weights().token_embd;
        const std::size_t embd_bytes = static_cast<std::size_t>(embd.rows) * embd.row_bytes;
        EXPECT_EQ(std::memcmp(embd.data, (*kept)->weights().token_embd.data, embd_bytes), 0) << what;
      }
    }
  }
}

TEST(ForwardInvariance, QuantizedSyntheticModelsAreBatchAndChunkInvariant) {
  for (WeightType t : {WeightType::Q8_0, WeightType::Q4_0, WeightType::F16}) {
    SyntheticModelSpec s;
    s.arch = t == WeightType::Q4_0 ? "qwen2" : "llama";
    s.weight_type = t;
    s.n_kv_heads = 2;
    const std::string path = test::temp_dir() + "/m.gguf";
    ASSERT_TRUE(write_synthetic_model(s, path));
    auto model = Model::load(path);
    ASSERT_TRUE(model) << model.error().message;
    check_invariance(**model, KvType::F16);
  }
}

TEST(ForwardInvariance, RejectsInconsistentBatches) {
  auto model = Model::load(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(model);
  const ModelConfig& c = (*model)->config();
  KvGeometry g{c.n_layers, c.n_kv_heads, c.head_dim, 32, KvType::F16};
  auto pool = KvPool::create(g, 2);
  ASSERT_TRUE(pool);
  BlockTable table;
  ASSERT_TRUE(table.reserve(**pool, 2));
  table.append(1, 0);
  const KvSeqView seq = table.view();
  ThreadPool tp(1);
  std::vector<float> logits(static_cast<std::size_t>(c.n_vocab));
  Batch bad_token;
  bad_token.add(c.n_vocab, 0, 0, 0, true);
  EXPECT_FALSE((*model)->forward(bad_token, KvView{g, {&seq, 1}}, logits, tp));
  Batch bad_slot;
  bad_slot.add(1, 0, 0, 5, true);
  EXPECT_FALSE((*model)->forward(bad_slot, KvView{g, {&seq, 1}}, logits, tp));
  Batch bad_seq;
  bad_seq.add(1, 0, 3, 0, true);
  EXPECT_FALSE((*model)->forward(bad_seq, KvView{g, {&seq, 1}}, logits, tp));
  Batch wrong_pos;
  wrong_pos.add(1, 4, 0, 0, true);
  EXPECT_FALSE((*model)->forward(wrong_pos, KvView{g, {&seq, 1}}, logits, tp));
  std::vector<float> small(3);
  Batch ok;
  ok.add(1, 0, 0, 0, true);
  EXPECT_FALSE((*model)->forward(ok, KvView{g, {&seq, 1}}, small, tp));
  EXPECT_TRUE((*model)->forward(ok, KvView{g, {&seq, 1}}, logits, tp));
  table.release(**pool);
}

}  // namespace
}  // namespace clm
