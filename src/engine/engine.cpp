#include "engine/engine.h"

namespace clm {

std::size_t kv_bytes_per_token(const ModelConfig& c, KvType type) {
  const std::size_t elem = type == KvType::F16 ? 2 : 4;
  return 2 * static_cast<std::size_t>(c.n_layers) * static_cast<std::size_t>(c.n_kv_heads) *
         static_cast<std::size_t>(c.head_dim) * elem;
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options) {
  if (options.n_ctx <= 0) return fail("context size must be positive");
  if (options.block_size <= 0 || options.block_size > 4096) return fail("block size must be in 1..4096");
  if (options.n_threads < 0) return fail("thread count must not be negative");

  std::unique_ptr<Engine> e(new Engine());
  e->options_ = options;
  LoadOptions load;
  load.on_progress = options.on_load_progress;
  auto model = Model::load(options.model_path, load);
  if (!model) return fail(model.error().message);
  e->model_ = std::move(*model);

  const ModelConfig& c = e->model_->config();
  KvGeometry g;
  g.n_layers = c.n_layers;
  g.n_kv_heads = c.n_kv_heads;
  g.head_dim = c.head_dim;
  g.block_size = options.block_size;
  g.type = options.kv_type;
  const std::size_t blocks_for_ctx =
      (static_cast<std::size_t>(options.n_ctx) + static_cast<std::size_t>(g.block_size) - 1) /
      static_cast<std::size_t>(g.block_size);
  const std::size_t n_blocks = options.kv_memory_mb > 0
                                   ? KvPool::blocks_for_bytes(g, options.kv_memory_mb << 20)
                                   : blocks_for_ctx;
  auto pool = KvPool::create(g, n_blocks);
  if (!pool) return fail(pool.error().message);
  e->pool_ = std::move(*pool);
  e->threads_ = std::make_unique<ThreadPool>(options.n_threads > 0 ? options.n_threads : hardware_threads());
  return e;
}

Result<GenerationStats> Engine::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                         const std::function<bool(const GeneratedToken&)>& on_token) {
  if (static_cast<int>(prompt.size()) > options_.n_ctx)
    return fail("prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size " +
                std::to_string(options_.n_ctx));
  GenerateOptions bounded = options;
  // A sequence never grows past the context size.
  bounded.max_tokens = std::min(options.max_tokens, options_.n_ctx - static_cast<int>(prompt.size()));
  Generator gen(*model_, *pool_, *threads_);
  return gen.generate(prompt, bounded, on_token);
}

}  // namespace clm
