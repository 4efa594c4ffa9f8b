// A scheduler over a model, a KV pool of a chosen size and a prefix cache,
// assembled directly so that tests pick the pool size, block size and
// scheduler limits; plus a recorder of what callbacks saw.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/kv_cache_manager.h"
#include "cache/kv_pool.h"
#include "engine/scheduler.h"
#include "engine/token_stream.h"
#include "model/fingerprint.h"
#include "model/model.h"
#include "model/synthetic_model.h"
#include "support/test_paths.h"

namespace clm::test {

struct RigOptions {
  std::size_t n_blocks = 64;
  int block_size = 16;
  KvTypes kv_types;
  bool prefix_caching = true;
  int threads = 1;
  SchedulerOptions scheduler;
};

struct Rig {
  Rig(Model& m, const RigOptions& o) : model(m), threads(o.threads) {
    const ModelConfig& c = m.config();
    auto p = KvPool::create(KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, o.block_size, o.kv_types}, o.n_blocks);
    EXPECT_TRUE(p) << p.error().message;
    pool = std::move(*p);
    CacheOptions co;
    co.prefix_caching = o.prefix_caching;
    CacheDeps deps;
    deps.rope = rope_shift_params(c);
    deps.threads = &threads;
    cache = std::make_unique<KvCacheManager>(*pool, model_fingerprint(m.file()), co, deps);
    scheduler = std::make_unique<Scheduler>(m, *cache, threads, o.scheduler);
  }
  ~Rig() { scheduler.reset(); }

  Model& model;
  ThreadPool threads;
  std::unique_ptr<KvPool> pool;
  std::unique_ptr<KvCacheManager> cache;
  std::unique_ptr<Scheduler> scheduler;
};

// Per request: every token event and the done summaries (a vector, so that
// a second done callback would show).
struct Recorder {
  std::map<RequestId, std::vector<TokenEvent>> tokens;
  std::map<RequestId, std::vector<RequestSummary>> done;
  std::vector<std::pair<RequestId, char>> log;  // 't' token, 'd' done, in order

  Result<RequestId> submit(Scheduler& s, Request r) {
    auto slot = std::make_shared<RequestId>(0);
    auto id = s.submit(
        std::move(r),
        [this, slot](const TokenEvent& ev) {
          tokens[*slot].push_back(ev);
          log.emplace_back(*slot, 't');
          return true;
        },
        [this, slot](const RequestSummary& sum) {
          done[*slot].push_back(sum);
          log.emplace_back(*slot, 'd');
        });
    if (id) *slot = *id;
    return id;
  }
};

inline std::vector<int32_t> prompt_of(int n, int salt, int vocab) {
  std::vector<int32_t> p{1};
  for (int i = 1; i < n; ++i) p.push_back(3 + (i * 37 + salt * 11) % (vocab - 3));
  return p;
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline Request greedy_request(std::vector<int32_t> prompt, int max_tokens, bool record_logits = false) {
  Request r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.stop_at_end_of_generation = false;
  r.sampler.temperature = 0.0f;
  r.record_logits = record_logits;
  return r;
}

// Models shared by the tests of this executable, loaded once.
inline Model& real_model() {
  static std::unique_ptr<Model> m = [] {
    auto r = Model::load(shared_file("models/stories260K.gguf"));
    EXPECT_TRUE(r) << r.error().message;
    return r ? std::move(*r) : nullptr;
  }();
  return *m;
}

inline Model& synthetic_model(WeightType type) {
  static std::map<WeightType, std::unique_ptr<Model>> models;
  auto& m = models[type];
  if (!m) {
    SyntheticModelSpec s;
    s.weight_type = type;
    s.n_kv_heads = 2;
    const std::string path = temp_dir() + "/synthetic.gguf";
    EXPECT_TRUE(write_synthetic_model(s, path));
    auto r = Model::load(path);
    EXPECT_TRUE(r) << r.error().message;
    m = std::move(*r);
  }
  return *m;
}

// Submits one request, runs the scheduler until idle, returns its summary.
inline RequestSummary run_one(Rig& rig, Request r, std::vector<TokenEvent>* events = nullptr) {
  Recorder rec;
  auto id = rec.submit(*rig.scheduler, std::move(r));
  EXPECT_TRUE(id) << id.error().message;
  if (!id) return {};
  rig.scheduler->run_until_idle();
  EXPECT_EQ(rec.done[*id].size(), 1u);
  if (events) *events = rec.tokens[*id];
  return rec.done[*id].front();
}

// No live sequence holds a block, and every cached one can be dropped.
inline void expect_nothing_held(Rig& rig) {
  const CacheStats st = rig.cache->stats();
  EXPECT_EQ(st.blocks_used, 0u);
  EXPECT_EQ(st.blocks_free + st.blocks_cached, st.blocks_total);
  rig.cache->clear_cached();
  EXPECT_EQ(rig.pool->n_free(), rig.pool->n_blocks());
}

}  // namespace clm::test
