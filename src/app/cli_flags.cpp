#include "app/cli_flags.h"

#include <cstdio>
#include <optional>

#include "app/fingerprint_memo.h"
#include "app/kernels_flag.h"
#include "app/kv_type_flags.h"
#include "app/model_source.h"
#include "app/progress_bar.h"

namespace clm {

namespace {

// The share as the help shows it: "0.15", not "0.150000".
std::string ratio_text(float ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ratio));
  return buf;
}

std::string blend_ratio_error(const std::string& text) {
  return "--blend-ratio must be a number in [0, 1] or \"auto\", not '" + text + "'";
}

}  // namespace

void add_engine_flags(CLI::App& cmd, EngineFlags& f) {
  EngineOptions& o = f.options;
  cmd.add_option("-m,--model", f.model, "GGUF model file (default: $CLMCACHE_MODEL, else a synthetic demo model)");
  cmd.add_option("-c,--ctx-size", o.scheduler.n_ctx, "context size in tokens")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd.add_option("-t,--threads", o.load.n_threads, "worker threads (0: all cores)")->check(CLI::Range(0, 1024));
  add_kv_type_flags(cmd, o.pool.kv_types);
  cmd.add_option("--block-size", o.pool.block_size, "tokens per KV block")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd.add_flag("--mmap", f.mmap,
               "use the weights in place from the file's memory map (shared page cache, instant load) "
               "instead of a private huge-page copy (faster decode)");
  auto* no_cache = cmd.add_flag_callback(
      "--no-prefix-cache", [&o] { o.cache.prefix_caching = false; },
      "cache nothing: no request reuses any K/V, whatever its \"reuse\" field says "
      "(--reuse off only changes the default)");
  cmd.add_flag_callback(
      "--no-partial-block-reuse", [&o] { o.cache.partial_block_reuse = false; },
      "reuse cached blocks only whole: do not copy the leading tokens of a cached block that the prompt "
      "continues only partly");
  auto* reuse = cmd.add_option_function<std::string>(
                       "--reuse",
                       // CLI11 has checked the name, so the lookup cannot fail.
                       [&o](const std::string& v) { o.scheduler.reuse.mode = parse_reuse_mode(v).value_or(o.scheduler.reuse.mode); },
                       "how prompts reuse cached K/V unless a request says otherwise: off, prefix (exact), "
                       "shift (also spans found elsewhere, K re-rotated; approximate), or blend (shift, "
                       "then recompute the copied tokens whose K/V deviate most)")
                    ->check(CLI::IsMember({"off", "prefix", "shift", "blend"}))
                    ->default_str(std::string(to_string(o.scheduler.reuse.mode)));
  no_cache->excludes(reuse);
  cmd.add_option("--min-reuse-tokens", o.scheduler.reuse.min_reuse_tokens, "shortest span that shift mode reuses, in tokens")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  cmd.add_option("--reuse-window", o.scheduler.reuse.window,
                 "shift mode searches spans only in the last N prompt tokens (0: the whole prompt)")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  cmd.add_option("--reuse-lead", o.scheduler.reuse.lead,
                 "shift mode computes the first K tokens of each reused span instead of copying them")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  cmd.add_option("--blend-ratio", f.blend_ratio,
                 "blend mode recomputes this share of the copied tokens, most deviant first; \"auto\" picks "
                 "the share per prompt from the deviations")
      ->check([](const std::string& v) { return parse_blend_ratio(v) ? std::string() : blend_ratio_error(v); })
      ->default_str(o.scheduler.reuse.blend_adaptive ? "auto" : ratio_text(o.scheduler.reuse.blend_ratio));
  cmd.add_option("--blend-layer", o.scheduler.reuse.blend_layer,
                 "blend mode measures each copied token's V deviation at this layer, after computing the ones "
                 "before it")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--block-strategy",
         [&o](const std::string& v) { o.scheduler.reuse.block_strategy = parse_block_strategy(v).value_or(o.scheduler.reuse.block_strategy); },
         "what shift and blend reuse beyond the exact prefix: token (any span of the same block type), "
         "semantic (only whole semantic blocks) or session (nothing: the exact prefix only)")
      ->check(CLI::IsMember({"token", "semantic", "session"}))
      ->default_str(std::string(to_string(o.scheduler.reuse.block_strategy)));
  cmd.add_option("--split-rules", o.split_rules,
                 "JSON rule file of the semantic splitter that types prompts for the block-type guard and the "
                 "semantic strategy (default: the built-in rules)");
  cmd.add_option("--kv-memory-mb", o.pool.kv_memory_mb, "KV cache budget in MiB (0: enough for one --ctx-size sequence, or with --kv-budget-tokens for the budget and what the policy keeps beyond it)")
      ->check(CLI::Range(0, 1 << 24));
  cmd.add_option("--parallel", o.scheduler.max_running, "sequences decoding at once")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd.add_option("--cache-hot-after", o.cache.hot_after_hits, "hits after which a cached block is evicted last")
      ->check(CLI::Range(1, 1 << 30))
      ->capture_default_str();
  cmd.add_option("--cache-ttl", o.cache.ttl_seconds, "seconds an unused cached block may stay (0: until memory is needed)")
      ->check(CLI::Range(0.0, 1e9));
  cmd.add_option("--kv-budget-tokens", o.scheduler.kv_budget_tokens,
                 "self-managed context: a sequence holds at most this many tokens of K/V and forgets the blocks "
                 "--evict picks instead of stopping, so it can run past --ctx-size (0: no budget)")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  cmd.add_option_function<std::string>(
         "--evict",
         // CLI11 has checked the name, so the lookup cannot fail.
         [&o](const std::string& v) { o.scheduler.evict.kind = parse_evict_kind(v).value_or(o.scheduler.evict.kind); },
         "what a sequence over its KV budget forgets: attention (blocks that received the least attention "
         "per query), window (the oldest), sinks-window (the oldest after the first block) or h2o (least "
         "summed attention)")
      ->check(CLI::IsMember({"attention", "window", "sinks-window", "h2o"}))
      ->default_str(std::string(evict_kind_name(o.scheduler.evict.kind)));
  cmd.add_option_function<std::string>(
         "--evict-positions",
         [&o](const std::string& v) { o.scheduler.evict_positions = parse_evict_positions(v).value_or(o.scheduler.evict_positions); },
         "what the kept tokens' positions become after a budgeted sequence forgets: keep (as computed; "
         "positions grow past --ctx-size) or compact (holes closed, kept K re-rotated, so positions stay "
         "below the tokens held: for models that must stay inside their trained context)")
      ->check(CLI::IsMember({"keep", "compact"}))
      ->default_str(std::string(evict_positions_name(o.scheduler.evict_positions)));
  add_tier_flags(cmd, f.tiers);
  add_kernels_flag(cmd);
}

void add_batch_flag(CLI::App& cmd, EngineFlags& f) {
  cmd.add_option("--max-batch-tokens", f.options.scheduler.max_batch_tokens,
                 "tokens per forward call: one decode token per running sequence plus prompt chunks")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
}

void add_sampler_flags(CLI::App& cmd, SamplerParams& p) {
  cmd.add_option("--temp", p.temperature, "temperature; 0 is greedy")->check(CLI::Range(0.0f, 100.0f));
  cmd.add_option("--top-k", p.top_k, "keep the k most likely tokens (0: off)")->check(CLI::NonNegativeNumber);
  cmd.add_option("--top-p", p.top_p, "nucleus sampling mass (1: off)")->check(CLI::Range(0.0f, 1.0f));
  cmd.add_option("--min-p", p.min_p, "drop tokens below min-p times the best (0: off)")->check(CLI::Range(0.0f, 1.0f));
  cmd.add_option("--repeat-penalty", p.repeat_penalty, "penalty for recently seen tokens (1: off)")
      ->check(CLI::Range(0.0f, 10.0f));
  cmd.add_option("--repeat-last-n", p.repeat_last_n, "window of the repeat penalty (-1: everything)")
      ->check(CLI::Range(-1, 1 << 24));
  cmd.add_option("--presence-penalty", p.presence_penalty, "subtract from tokens already present")
      ->check(CLI::Range(-2.0f, 2.0f));
  cmd.add_option("--frequency-penalty", p.frequency_penalty, "subtract per occurrence of a token")
      ->check(CLI::Range(-2.0f, 2.0f));
  cmd.add_option("-s,--seed", p.seed, "random seed (same seed, same output)");
}

Result<std::unique_ptr<Engine>> open_engine(const EngineFlags& f, bool show_progress, EngineDeps deps) {
  auto source = resolve_model(f.model);
  if (!source) return std::unexpected(source.error());
  EngineOptions options = f.options;
  options.load.model_path = source->path;
  ReuseOptions& reuse = options.scheduler.reuse;
  if (!f.blend_ratio.empty()) {
    // CLI11 has checked the text, so parsing cannot fail.
    const BlendChoice blend = parse_blend_ratio(f.blend_ratio).value_or(BlendChoice{});
    reuse.blend_ratio = blend.ratio;
    reuse.blend_adaptive = blend.adaptive;
  }
  if (!options.cache.prefix_caching) reuse.mode = ReuseMode::Off;
  LoadOptions& weights = options.load.weights;
  weights.load = f.mmap ? FileLoad::Map : FileLoad::Copy;
  auto tiers = tier_factories(f.tiers);
  if (!tiers) return std::unexpected(tiers.error());
  options.tiers.factories = std::move(*tiers);
  std::optional<ProgressBar> bar;
  if (show_progress) {
    bar.emplace("loading " + source->path);
    weights.on_progress = [&bar](float fraction) { bar->update(fraction); };
  }
  weights.known_fingerprint = recall_fingerprint(source->path);
  auto engine = Engine::create(options, deps);
  if (!engine) return std::unexpected(engine.error());
  if (!weights.known_fingerprint) remember_fingerprint(source->path, (*engine)->fingerprint());
  return std::move(*engine);
}

std::unique_ptr<Engine> load_engine(const EngineFlags& f, EngineDeps deps) {
  auto engine = open_engine(f, /*show_progress=*/true, deps);
  if (!engine) {
    std::fprintf(stderr, "clmcache: %s\n", engine.error().message.c_str());
    return nullptr;
  }
  return std::move(*engine);
}

}  // namespace clm
