// `clmcache eval ...`: quality evaluations (the measuring lives in eval/).
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/commands.h"
#include "app/kernels_flag.h"
#include "app/kv_type_flags.h"
#include "evict_cases.h"
#include "evict_eval.h"
#include "kv_type_eval.h"
#include "reuse_cases.h"
#include "reuse_eval.h"
#include "reuse_report.h"

namespace clm {

namespace {

// Progress on stderr, only for a person watching: "eval reuse: case 3/36".
std::function<void(std::size_t, std::size_t)> case_progress(const char* what) {
  if (!::isatty(STDERR_FILENO)) return nullptr;
  return [what](std::size_t i, std::size_t n) {
    std::fprintf(stderr, "\r%s: case %zu/%zu", what, i + 1, n);
    if (i + 1 == n) std::fprintf(stderr, "\n");
  };
}

// The message of a failed evaluation, after ending a progress line.
int eval_failed(const Error& e, bool progress_shown) {
  if (progress_shown) std::fprintf(stderr, "\n");
  std::fprintf(stderr, "clmcache: %s\n", e.message.c_str());
  return 1;
}

// The report in the format asked for (-o md|json).
template <class Report>
void print_report(const Report& r, const std::string& format) {
  if (format == "json")
    std::cout << to_json(r).dump(2) << "\n";
  else
    std::cout << to_markdown(r);
}

struct ReuseEvalFlags {
  ReuseEvalOptions options;
  std::string cases_path;
  std::vector<std::string> modes = {"off", "prefix", "shift"};
  std::vector<std::string> blend_ratios;
  std::string block_strategy = std::string(to_string(ReuseOptions{}.block_strategy));
  std::string format = "md";
  std::string json_path;  // also write the JSON here
};

int eval_reuse(ReuseEvalFlags& f) {
  f.options.modes.clear();
  for (const auto& m : f.modes) {
    const auto mode = parse_reuse_mode(m);
    if (!mode) {
      std::fprintf(stderr, "clmcache: unknown reuse mode '%s' (off, prefix, shift, blend)\n", m.c_str());
      return 1;
    }
    f.options.modes.push_back(*mode);
  }
  f.options.blend_ratios.clear();
  for (const auto& r : f.blend_ratios) {
    const auto b = parse_blend_ratio(r);
    if (!b) {
      std::fprintf(stderr, "clmcache: --blend-ratios: '%s' is not a number in [0, 1] or \"auto\"\n", r.c_str());
      return 1;
    }
    f.options.blend_ratios.push_back(*b);
  }
  // CLI11 has checked the name.
  ReuseOptions& reuse = f.options.engine.scheduler.reuse;
  reuse.block_strategy = parse_block_strategy(f.block_strategy).value_or(ReuseOptions{}.block_strategy);
  auto cases = load_reuse_cases(f.cases_path);
  if (!cases) return eval_failed(cases.error(), false);
  f.options.on_case = case_progress("eval reuse");
  auto r = run_reuse_eval(f.options, *cases);
  if (!r) return eval_failed(r.error(), f.options.on_case != nullptr);
  print_report(*r, f.format);
  if (!f.json_path.empty()) {
    std::ofstream out(f.json_path);
    out << to_json(*r).dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "clmcache: cannot write %s\n", f.json_path.c_str());
      return 1;
    }
  }
  return 0;
}

struct EvictEvalFlags {
  EvictEvalOptions options;
  std::string cases_path;
  std::vector<std::string> policies = {"window", "sinks-window", "h2o", "attention"};
  std::vector<std::string> protect;
  bool no_protect = false;
  bool protect_all_occurrences = false;
  std::string positions = "keep";
};

int eval_evict(EvictEvalFlags& f) {
  f.options.policies.clear();
  for (const auto& name : f.policies) {
    const auto kind = parse_evict_kind(name);
    if (!kind) {
      std::fprintf(stderr, "clmcache: unknown eviction policy '%s' (window, sinks-window, h2o, attention)\n",
                   name.c_str());
      return 1;
    }
    f.options.policies.push_back(*kind);
  }
  if (f.no_protect)
    f.options.policy.protect_patterns.clear();
  else if (!f.protect.empty())
    f.options.policy.protect_patterns = f.protect;
  f.options.policy.protect_first_only = !f.protect_all_occurrences;
  f.options.compact_positions = f.positions == "compact";
  auto cases = load_evict_cases(f.cases_path);
  if (!cases) return eval_failed(cases.error(), false);
  f.options.on_case = case_progress("eval evict");
  auto r = run_evict_eval(f.options, *cases);
  if (!r) return eval_failed(r.error(), f.options.on_case != nullptr);
  std::cout << evict_markdown(*r);
  return 0;
}

void register_eval_evict(CLI::App* eval, int& exit_code) {
  auto ef = std::make_shared<EvictEvalFlags>();
  EvictEvalOptions& o = ef->options;
  EvictOptions& p = o.policy;
  CLI::App* evict = eval->add_subcommand(
      "evict", "ΔNLL and top-1 agreement of a continuation when eviction policies forget part of a long prompt");
  evict->add_option("--cases", ef->cases_path, "cases file (JSON; see docs/QUALITY.md)")->required();
  evict->add_option("-m,--model", o.model_path, "GGUF model file")->required();
  evict->add_option("--policies", ef->policies, "policies to compare (window, sinks-window, h2o, attention)")
      ->delimiter(',');
  evict->add_option("--budgets", o.budgets, "shares of the prompt kept, each in (0, 1]")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  evict->add_option("--prompt-tokens", o.prompt_tokens, "prompt length in tokens, BOS included")
      ->check(CLI::Range(2, 1 << 20));
  evict->add_option("--continuation-tokens", o.continuation_tokens, "tokens teacher-forced after the prompt")
      ->check(CLI::Range(1, 1 << 16));
  evict->add_option("--chunk-tokens", o.chunk_tokens, "prefill chunk; the policy runs between chunks")
      ->check(CLI::Range(1, 1 << 16));
  evict->add_option("--evict-block", p.block_tokens, "tokens per policy block")->check(CLI::Range(1, 4096));
  evict->add_option("--aggregate-every", p.aggregate_every, "processed tokens between aggregations")
      ->check(CLI::Range(1, 1 << 20));
  evict->add_option("--decay", p.decay, "share of a block's previous score an aggregation keeps, in [0, 1)");
  evict->add_option("--candidate-fraction", p.candidate_fraction, "blocks under this x the mean score are candidates")
      ->check(CLI::Range(0.0, 1e6));
  evict->add_option("--sink-blocks", p.sink_blocks, "first blocks never evicted")->check(CLI::Range(0, 1 << 20));
  evict->add_option("--recent-tokens", p.recent_tokens, "blocks touching the last this many tokens are never evicted")
      ->check(CLI::Range(1, 1 << 20));
  evict->add_option("--top-share", p.top_share, "blocks in this top share of an aggregation are never evicted ...")
      ->check(CLI::Range(0.0, 1.0));
  evict->add_option("--top-history", p.top_history, "... for this many aggregations")->check(CLI::Range(0, 1 << 16));
  evict->add_option("--protect", ef->protect, "protect rule (RE2); repeat for several; replaces the defaults");
  evict->add_flag("--no-protect", ef->no_protect, "no protect rules");
  evict->add_flag("--protect-all-occurrences", ef->protect_all_occurrences,
                  "every occurrence of a matched text is protected, not only the first");
  evict->add_option("--protect-share", p.protect_share,
                    "over budget, blocks kept only by protect rules hold at most this share of it, in [0, 1]")
      ->check(CLI::Range(0.0, 1.0));
  evict->add_option("--window-scale", p.window_scale,
                    "attention over a budget B of N tokens: the recent window covers at least this x (1 - B/N) x B "
                    "tokens (0: --recent-tokens only)")
      ->check(CLI::Range(0.0, 1e6));
  add_kv_type_flags(*evict, ef->options.kv_types);
  evict->add_option("--evict-positions", ef->positions,
                    "keep: kept tokens keep their positions; compact: renumbered without gaps, K re-rotated")
      ->check(CLI::IsMember({"keep", "compact"}));
  evict->add_option("-t,--threads", o.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  evict->callback([ef, &exit_code] { exit_code = eval_evict(*ef); });
}

struct KvTypeEvalFlags {
  KvTypeEvalOptions options;
  std::string cases_path;
  std::string format = "md";
};

// A cases file of asks (the reuse sets) or of plain texts (the eviction
// sets); when it is neither, the error is the one for asks, the usual kind.
int eval_kv_type(KvTypeEvalFlags& f) {
  auto cases = load_reuse_cases(f.cases_path);
  std::optional<EvictCaseSet> texts;
  if (!cases) {
    auto loaded = load_evict_cases(f.cases_path);
    if (!loaded) return eval_failed(cases.error(), false);
    texts = std::move(*loaded);
  }
  f.options.on_case = case_progress("eval kv-type");
  auto r = cases ? run_kv_type_eval(f.options, *cases) : run_kv_type_eval(f.options, *texts);
  if (!r) return eval_failed(r.error(), f.options.on_case != nullptr);
  print_report(*r, f.format);
  return 0;
}

void register_eval_kv_type(CLI::App* eval, int& exit_code) {
  auto kf = std::make_shared<KvTypeEvalFlags>();
  KvTypeEvalOptions& o = kf->options;
  CLI::App* kv = eval->add_subcommand(
      "kv-type", "KL divergence, top-1 agreement and NLL of one K/V type against another, teacher-forced on a cases file");
  kv->add_option("--cases", kf->cases_path, "cases file (JSON): a set of asks (the reuse sets) or of plain texts (the eviction sets; see "
                 "docs/QUALITY.md)")
      ->required();
  kv->add_option("-m,--model", o.engine.load.model_path, "GGUF model file")->required();
  kv->add_option_function<std::string>(
        "--reference", [&o](const std::string& v) { o.reference = parse_kv_type(v).value_or(KvType::F16); },
        "K/V type of the reference, for K and V")
      ->check(CLI::IsMember({"f16", "f32", "q8_0", "q4_0", "fp8"}))
      ->default_str("f16");
  add_kv_type_flags(*kv, o.tested);
  kv->add_option("--greedy-tokens", o.greedy_tokens, "continuation length when a case has no reference text")
      ->check(CLI::Range(1, 1 << 16));
  kv->add_option("--text-ask-tokens", o.text_ask_tokens,
                 "with a cases file of plain texts: tokens of each text that form the ask (the rest is scored)")
      ->check(CLI::Range(1, 1 << 16));
  kv->add_option("-c,--ctx-size", o.n_ctx, "context size (0: the model's)")->check(CLI::Range(0, 1 << 24));
  kv->add_option("-t,--threads", o.engine.load.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  kv->add_option("-o,--output", kf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  kv->callback([kf, &exit_code] { exit_code = eval_kv_type(*kf); });
}

}  // namespace

void register_eval_command(CLI::App& app, int& exit_code) {
  CLI::App* eval = app.add_subcommand("eval", "quality evaluations: what approximate cache reuse changes");
  eval->require_subcommand(1);

  auto rf = std::make_shared<ReuseEvalFlags>();
  ReuseEvalOptions& o = rf->options;
  CLI::App* reuse = eval->add_subcommand(
      "reuse", "KL divergence and top-1 agreement of reuse modes against a full recompute, on a cases file");
  reuse->add_option("--cases", rf->cases_path, "cases file (JSON; see docs/QUALITY.md)")->required();
  reuse->add_option("-m,--model", o.engine.load.model_path, "GGUF model file")->required();
  reuse->add_option("--modes", rf->modes, "reuse modes to compare (off, prefix, shift, blend)")->delimiter(',');
  reuse->add_option("--blend-ratios", rf->blend_ratios,
                    "blend: shares of the copied tokens recomputed (or auto); a list sweeps")
      ->delimiter(',');
  reuse->add_option("--blend-layer", o.engine.scheduler.reuse.blend_layer,
                    "blend: the layer whose V deviation picks the tokens")
      ->check(CLI::Range(1, 1 << 16));
  reuse->add_option("--blend-lead", o.blend_leads, "blend: the lead of its spans; a list sweeps")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 16));
  reuse->add_option("--reuse-lead", o.leads, "shift: tokens recomputed at the start of each span; a list sweeps")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 16));
  reuse->add_option("--min-reuse", o.engine.scheduler.reuse.min_reuse_tokens,
                    "shift: shortest span reused, in tokens")
      ->check(CLI::Range(1, 1 << 16));
  reuse->add_option("--block-strategy", rf->block_strategy,
                    "shift and blend: token (any span of the same block type), semantic (whole blocks only) or "
                    "session (the exact prefix only)")
      ->check(CLI::IsMember({"token", "semantic", "session"}));
  add_kv_type_flags(*reuse, o.engine.pool.kv_types);
  reuse->add_option("--greedy-tokens", o.greedy_tokens,
                    "greedy continuation length (the reference continuation when a case has none)")
      ->check(CLI::Range(1, 1 << 16));
  reuse->add_option("-c,--ctx-size", o.n_ctx, "context size (0: the model's)")->check(CLI::Range(0, 1 << 24));
  reuse->add_option("--block-size", o.engine.pool.block_size, "tokens per KV block")->check(CLI::Range(1, 4096));
  reuse->add_option("-t,--threads", o.engine.load.n_threads, "threads (0: all cores)")->check(CLI::Range(0, 1024));
  reuse->add_option("-o,--output", rf->format, "md or json")->check(CLI::IsMember({"md", "json"}));
  reuse->add_option("--json", rf->json_path, "also write the results as JSON to this file");
  reuse->callback([rf, &exit_code] { exit_code = eval_reuse(*rf); });
  register_eval_evict(eval, exit_code);
  register_eval_kv_type(eval, exit_code);
  for (CLI::App* each : eval->get_subcommands([](CLI::App*) { return true; })) add_kernels_flag(*each);
}

}  // namespace clm
