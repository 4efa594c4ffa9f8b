#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <utility>

#include "kernels/numerics.h"

namespace clm {

std::size_t kv_bytes_per_token(const ModelConfig& c, KvTypes types) {
  return static_cast<std::size_t>(c.n_layers) * static_cast<std::size_t>(c.n_kv_heads) *
         (kv_row_bytes(types.k, c.head_dim) + kv_row_bytes(types.v, c.head_dim));
}

Result<std::unique_ptr<Engine>> Engine::create(const EngineOptions& options, EngineDeps deps) {
  if (auto checked = check_engine_options(options); !checked) return std::unexpected(checked.error());

  std::shared_ptr<const PromptTyper> typer = PromptTyper::with_default_rules();
  if (!options.split_rules.empty()) {
    auto loaded = PromptTyper::from_rules_file(options.split_rules);
    if (!loaded) return fail(loaded.error().message);
    typer = std::move(*loaded);
  }

  const PoolOptions& po = options.pool;
  const SchedulerOptions& so = options.scheduler;
  std::unique_ptr<Engine> e(new Engine());
  e->options_ = options;
  auto model = Model::load(options.load.model_path, options.load.weights);
  if (!model) return fail(model.error().message);
  e->model_ = std::move(*model);
  e->fingerprint_ = *e->model_->fingerprint();  // taken by the load, before it gave the file's bytes back
  e->cache_fingerprint_ =
      clm::cache_fingerprint(e->fingerprint_, kernel_numerics_id(active_kernel_path()), po.kv_types);

  const ModelConfig& c = e->model_->config();
  for (const auto& [flag, type] : {std::pair{"--cache-type-k", po.kv_types.k}, {"--cache-type-v", po.kv_types.v}})
    if (const std::string why = kv_type_unsupported(type, c.head_dim); !why.empty())
      return fail(std::string(flag) + " " + std::string(kv_type_name(type)) + ": " + why);
  KvGeometry g;
  g.n_layers = c.n_layers;
  g.n_kv_heads = c.n_kv_heads;
  g.head_dim = c.head_dim;
  g.block_size = po.block_size;
  g.types = po.kv_types;
  const auto blocks_of = [&](double tokens) {
    return static_cast<std::size_t>(std::ceil(tokens / static_cast<double>(g.block_size)));
  };
  // One sequence's worth: its context, or with a KV budget the budget plus
  // what the policy may keep beyond it (protected text up to protect_share)
  // and the blocks being filled, so that a budget near the context does not
  // end the sequence at a full pool.
  std::size_t blocks_for_ctx = blocks_of(so.n_ctx);
  if (so.kv_budget_tokens > 0)
    blocks_for_ctx = std::max(blocks_for_ctx, blocks_of(so.kv_budget_tokens) +
                                                  blocks_of(so.evict.protect_share * so.kv_budget_tokens) + 2);
  const std::size_t blocks_for_memory = po.kv_memory_mb > 0 ? KvPool::blocks_for_bytes(g, po.kv_memory_mb << 20) : 0;
  auto pool = KvPool::create(g, po.kv_memory_mb > 0 ? blocks_for_memory : blocks_for_ctx);
  if (!pool) return fail(pool.error().message);
  e->pool_ = std::move(*pool);
  e->threads_ = std::make_unique<ThreadPool>(options.load.n_threads > 0 ? options.load.n_threads : hardware_threads());

  if (!options.tiers.factories.empty()) {
    std::vector<std::unique_ptr<CacheTier>> tiers;
    for (const TierFactory& open : options.tiers.factories) {
      auto tier = open(e->cache_fingerprint_, g);
      if (tier) {
        tiers.push_back(std::move(*tier));
        continue;
      }
      // A store that cannot be opened now (a full disk) was left as it is:
      // serving without it loses nothing, and the next start uses it again.
      if (tier.error().kind != ErrorKind::Unavailable) return fail(tier.error().message);
      std::fprintf(stderr, "clmcache: %s; running without this tier until a start finds it usable\n",
                   tier.error().message.c_str());
      e->unavailable_tiers_.push_back(tier.error().message);
    }
    if (!tiers.empty())
      e->tiers_ = std::make_unique<TierSet>(std::move(tiers), e->cache_fingerprint_, g,
                                            options.tiers.write_queue_mb << 20, deps.kv_events);
  }
  CacheDeps cache_deps;
  cache_deps.rope = rope_shift_params(c);
  cache_deps.threads = e->threads_.get();
  cache_deps.observer = e->tiers_.get();
  cache_deps.events = deps.kv_events;
  e->cache_ = std::make_unique<KvCacheManager>(*e->pool_, e->cache_fingerprint_, options.cache, std::move(cache_deps));
  // Without a prefix cache nothing is reused, whatever the default mode.
  SchedulerOptions sched = so;
  if (!options.cache.prefix_caching) sched.reuse.mode = ReuseMode::Off;
  e->scheduler_ = std::make_unique<Scheduler>(*e->model_, *e->cache_, *e->threads_, std::move(sched),
                                              SchedulerDeps{std::move(typer), e->tiers_.get()});
  return e;
}

Engine::~Engine() = default;

const ReuseOptions& Engine::reuse_defaults() const { return scheduler_->options().reuse; }

void Engine::start() { scheduler_->start(); }

void Engine::stop() { scheduler_->stop(); }

Result<std::unique_ptr<TokenStream>> Engine::open_stream(Request request, TokenStream::ReadyCallback on_ready) {
  return TokenStream::open(*scheduler_, std::move(request), std::move(on_ready));
}

void Engine::pin_session(std::string id, std::vector<int32_t> tokens, uint64_t cache_namespace, double hold_s) {
  scheduler_->pin_session(std::move(id), std::move(tokens), cache_namespace, hold_s);
}

void Engine::unpin_session(std::string id, PinEnd end) { scheduler_->unpin_session(std::move(id), end); }

void Engine::clear_cached() { scheduler_->cache().clear_cached(); }

Result<GenerationStats> Engine::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                         const std::function<bool(const GeneratedToken&)>& on_token) {
  Request req{options, std::vector<int32_t>(prompt.begin(), prompt.end())};

  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    RequestSummary summary;
  };
  auto wait = std::make_shared<Wait>();
  auto id = scheduler_->submit(
      std::move(req), [&on_token](const TokenEvent& ev) { return !on_token || on_token(ev); },
      [wait](const RequestSummary& s) {
        {
          std::lock_guard lock(wait->mu);
          wait->done = true;
          wait->summary = s;
        }
        wait->cv.notify_all();
      });
  if (!id) return std::unexpected(id.error());
  auto is_done = [&] {
    std::lock_guard lock(wait->mu);
    return wait->done;
  };
  if (scheduler_->started()) {
    std::unique_lock lock(wait->mu);
    wait->cv.wait(lock, [&] { return wait->done; });
  } else {
    std::lock_guard step_lock(step_mu_);
    while (!is_done()) scheduler_->step();
  }

  RequestSummary& s = wait->summary;  // the scheduler is done with it
  if (s.stop_reason == StopReason::Error) return fail(s.error);
  return GenerationStats{std::move(s)};
}

EngineCacheStats Engine::cache_stats() const {
  EngineCacheStats s{scheduler_->cache_stats(), scheduler_->stats(), tiers_ ? tiers_->stats() : TierStats{}};
  s.tiers.unavailable = unavailable_tiers_;
  return s;
}

}  // namespace clm
