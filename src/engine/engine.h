// Engine: a loaded model with its KV pool and worker threads, built from one
// options struct. The CLI and server talk to this, never to the layers below.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "cache/kv_pool.h"
#include "engine/generator.h"
#include "model/model.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

struct EngineOptions {
  std::string model_path;
  int n_ctx = 4096;            // tokens one sequence may hold
  int n_threads = 0;           // 0: all hardware threads
  KvType kv_type = KvType::F16;
  int block_size = 32;         // tokens per KV block
  std::size_t kv_memory_mb = 0;  // 0: exactly enough blocks for n_ctx
  std::function<void(float)> on_load_progress;
};

class Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineOptions& options);

  Model& model() { return *model_; }
  KvPool& pool() { return *pool_; }
  ThreadPool& threads() { return *threads_; }
  const EngineOptions& options() const { return options_; }

  Result<GenerationStats> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                   const std::function<bool(const GeneratedToken&)>& on_token);

 private:
  Engine() = default;
  EngineOptions options_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<ThreadPool> threads_;
};

// Bytes of K/V one token occupies for this model and KV type.
std::size_t kv_bytes_per_token(const ModelConfig& config, KvType type);

}  // namespace clm
