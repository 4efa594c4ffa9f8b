#include "restore_bench.h"

#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "bench_requests.h"
#include "engine/engine.h"
#include "kernels/cpu_features.h"
#include "redis_process.h"
#include "reuse_prompts.h"
#include "tier/open_cache_tier.h"
#include "tier/redis_tier.h"

extern char** environ;

namespace clm {

namespace {

namespace fs = std::filesystem;

// A temporary directory removed when the run ends, whatever happens.
struct WorkDir {
  WorkDir() {
    std::string pattern = (fs::temp_directory_path() / "clmcache-restore-XXXXXX").string();
    if (::mkdtemp(pattern.data())) path = pattern;
  }
  ~WorkDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  std::string path;
};

TierFactory disk_tier(const std::string& dir) {
  return [dir](uint64_t fingerprint, const KvGeometry& geometry) {
    DiskTierOptions options;
    options.min_free_bytes = 0;  // a benchmark's few MB; the default floor would refuse on a full /tmp
    return open_cache_tier(dir, fingerprint, geometry, options);
  };
}

Result<TierFactory> redis_tier(const std::string& url) {
  auto address = parse_redis_url(url);
  if (!address) return std::unexpected(address.error());
  RedisTierOptions options;
  options.address = *address;
  // A loaded machine must not trip the breaker on a slow reply.
  options.command_timeout_s = 5.0;
  options.connect_timeout_s = 5.0;
  return TierFactory([options](uint64_t fingerprint, const KvGeometry& geometry) -> Result<std::unique_ptr<CacheTier>> {
    auto tier = RedisTier::open(options, fingerprint, geometry);
    if (!tier) return std::unexpected(tier.error());
    return std::unique_ptr<CacheTier>(std::move(*tier));
  });
}

Result<std::unique_ptr<Engine>> make_engine(const RestoreBenchOptions& o, std::vector<TierFactory> tiers) {
  EngineOptions eo = o.engine;
  eo.scheduler.max_running = 1;
  eo.scheduler.n_ctx = o.prefix_tokens + o.suffix_tokens + o.agree_tokens + 2 * o.engine.pool.block_size;
  eo.scheduler.reuse.mode = ReuseMode::Prefix;
  eo.tiers.factories = std::move(tiers);
  return Engine::create(eo);
}

// The prefix the first server computes, and the request that continues it.
struct Prompts {
  std::vector<int32_t> prefix, full;
};

Result<Prompts> make_prompts(Engine& engine, const RestoreBenchOptions& o) {
  auto dialogue = make_reuse_prompts(engine.model().tokenizer(), o.prefix_tokens + o.suffix_tokens, 1);
  if (!dialogue) return std::unexpected(dialogue.error());
  Prompts p;
  p.full = std::move(dialogue->base);
  p.prefix.assign(p.full.begin(), p.full.begin() + o.prefix_tokens);
  return p;
}

// Computes the prefix with these tiers, then lets the engine go: its
// destruction waits for the tier writes.
Status compute_prefix(const RestoreBenchOptions& o, std::vector<TierFactory> tiers) {
  auto engine = make_engine(o, std::move(tiers));
  if (!engine) return std::unexpected(engine.error());
  auto prompts = make_prompts(**engine, o);
  if (!prompts) return std::unexpected(prompts.error());
  auto done = generate_counted(**engine, prompts->prefix, greedy_request(1, ReuseMode::Prefix), nullptr, "restore");
  if (!done) return std::unexpected(done.error());
  return {};
}

struct Run {
  double ttft_s = 0;
  int restored = 0;
  std::vector<int32_t> tokens;
};

// The full request on a fresh engine (nothing in RAM) with these tiers.
Result<Run> run_fresh(const RestoreBenchOptions& o, std::vector<TierFactory> tiers) {
  auto engine = make_engine(o, std::move(tiers));
  if (!engine) return std::unexpected(engine.error());
  auto prompts = make_prompts(**engine, o);
  if (!prompts) return std::unexpected(prompts.error());
  Run r;
  auto stats = generate_counted(**engine, prompts->full, greedy_request(o.agree_tokens, ReuseMode::Prefix), &r.tokens,
                                "restore");
  if (!stats) return std::unexpected(stats.error());
  r.ttft_s = stats->time_to_first_token_s;
  r.restored = stats->reuse.prefix;
  return r;
}

// Warm and cold fresh engines in turn, the order swapped every repetition.
Result<RestorePair> alternate(const RestoreBenchOptions& o, const std::function<std::vector<TierFactory>()>& warm_tiers,
                              const char* what) {
  std::vector<double> warm, cold;
  RestorePair pair;
  std::vector<int32_t> warm_tokens, cold_tokens;
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (int side = 0; side < 2; ++side) {
      const bool warm_side = (side == 0) == (rep % 2 == 0);
      auto r = run_fresh(o, warm_side ? warm_tiers() : std::vector<TierFactory>{});
      if (!r) return std::unexpected(r.error());
      (warm_side ? warm : cold).push_back(r->ttft_s);
      if (rep == 0) (warm_side ? warm_tokens : cold_tokens) = r->tokens;
      if (warm_side && rep == 0) pair.restored_tokens = r->restored;
      if (warm_side && r->restored == 0)
        return fail(std::string("bench restore: ") + what + ": nothing was restored (the tier lost the prefix)");
    }
  }
  pair.warm_ttft_s = summarize(warm);
  pair.cold_ttft_s = summarize(cold);
  pair.agree_with_cold = leading_agreement(warm_tokens, cold_tokens);
  return pair;
}

// Runs this program again as the other server of part (b).
Status spawn_writer(const RestoreBenchOptions& o, const std::string& url) {
  const EngineOptions& e = o.engine;
  const std::vector<std::string> args = {o.self_exe, "bench", "restore", "--write-redis", url, "-m", e.load.model_path,
                                         "-t", std::to_string(e.load.n_threads), "--block-size",
                                         std::to_string(e.pool.block_size), "--batch",
                                         std::to_string(e.scheduler.max_batch_tokens), "--prefix-tokens",
                                         std::to_string(o.prefix_tokens), "--suffix-tokens",
                                         std::to_string(o.suffix_tokens), "--agree", std::to_string(o.agree_tokens),
                                         // Its K/V must be this path's to be a hit here.
                                         "--kernels", std::string(kernel_path_name(active_kernel_path()))};
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, o.self_exe.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
    return fail("bench restore: cannot run " + o.self_exe);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail("bench restore: the writing process failed");
  return {};
}

}  // namespace

Status run_restore_writer(const RestoreBenchOptions& o, const std::string& redis_url) {
  auto redis = redis_tier(redis_url);
  if (!redis) return std::unexpected(redis.error());
  return compute_prefix(o, {*redis});
}

Result<RestoreBenchResult> run_restore_bench(const RestoreBenchOptions& o) {
  if (o.repetitions < 1 || o.engine.pool.block_size < 1 || o.engine.scheduler.max_batch_tokens < 1 ||
      o.agree_tokens < 1 || o.suffix_tokens < 1 || o.prefix_tokens < o.engine.pool.block_size + 2)
    return fail("bench restore: repetitions, block size, batch, suffix and agreement tokens must be positive, and the "
                "prefix longer than a block");
  WorkDir work;
  if (work.path.empty()) return fail("bench restore: cannot create a temporary directory");
  RestoreBenchResult result;
  result.model = fs::path(o.engine.load.model_path).filename().string();  // no machine path in reports
  result.prompt_tokens = o.prefix_tokens + o.suffix_tokens;

  const std::string disk = work.path + "/disk";
  std::fprintf(stderr, "bench restore: (a) %d-token prefix to a disk cache, then fresh engines, %d repetitions\n",
               o.prefix_tokens, o.repetitions);
  if (auto ok = compute_prefix(o, {disk_tier(disk)}); !ok) return std::unexpected(ok.error());
  auto disk_pair = alternate(o, [&] { return std::vector<TierFactory>{disk_tier(disk)}; }, "disk");
  if (!disk_pair) return std::unexpected(disk_pair.error());
  result.disk = *disk_pair;
  {
    auto probe = make_engine(o, {});
    if (probe) result.n_threads = static_cast<int>((*probe)->threads().size());
  }

  if (!o.redis) {
    result.redis_skipped = "not asked for (--no-redis)";
    return result;
  }
  auto redis = RedisProcess::start(work.path);
  if (!redis) {
    result.redis_skipped = redis.error().message;
    std::fprintf(stderr, "bench restore: part (b) skipped: %s\n", result.redis_skipped.c_str());
    return result;
  }
  std::fprintf(stderr, "bench restore: (b) another process writes the prefix to Redis at %s\n", (*redis)->url().c_str());
  if (auto ok = spawn_writer(o, (*redis)->url()); !ok) return std::unexpected(ok.error());
  auto factory = redis_tier((*redis)->url());
  if (!factory) return std::unexpected(factory.error());
  auto redis_pair = alternate(o, [&] { return std::vector<TierFactory>{*factory}; }, "redis");
  if (!redis_pair) return std::unexpected(redis_pair.error());
  result.redis = *redis_pair;
  return result;
}

}  // namespace clm
