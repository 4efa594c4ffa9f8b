#include "reuse_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "engine/engine.h"
#include "model/model_config.h"
#include "model/prefill_flops.h"
#include "eval_requests.h"
#include "token_overlap.h"

namespace clm {

namespace {

// KV blocks the largest case holds at once: its warm prompts stay cached
// while the asked prompt and its continuation run. The pool gets at least
// this many, so no eviction ever removes what a case means to reuse.
std::size_t blocks_needed(const std::vector<TokenizedCase>& cases, int continuation, int block_size, int n_ctx) {
  auto blocks = [&](std::size_t tokens) { return tokens / static_cast<std::size_t>(block_size) + 2; };
  std::size_t most = blocks(static_cast<std::size_t>(n_ctx));
  for (const auto& c : cases) {
    std::size_t n = 0;
    for (const auto& w : c.warm) n += blocks(w.size());
    const std::size_t cont = c.reference ? std::max(c.reference->size(), static_cast<std::size_t>(continuation))
                                         : static_cast<std::size_t>(continuation);
    n += blocks(c.ask.size() + cont);
    most = std::max(most, n);
  }
  return most;
}

// A variant with no lead or blend share: how warm-up and reference runs go.
ReuseVariant plain(ReuseMode mode) {
  ReuseVariant v;
  v.mode = mode;
  return v;
}

// One greedy request in the variant's mode.
Result<EvalRun> run_request(Engine& engine, std::span<const int32_t> prompt, int max_tokens, const ReuseVariant& v,
                            int prompt_logprobs) {
  GenerateOptions g;
  if (v.mode == ReuseMode::Blend) g.overrides.blend = v.blend;
  g.overrides.reuse = v.mode;
  return clm::run_request(engine, prompt, max_tokens, g, prompt_logprobs);
}

// Fills the cache with the warm prompts, computed exactly (prefix reuse only).
Status warm_up(Engine& engine, const TokenizedCase& c) {
  clear_cache(engine);
  for (const auto& w : c.warm) {
    auto r = run_request(engine, w, 0, plain(ReuseMode::Prefix), -1);
    if (!r) return std::unexpected(r.error());
  }
  return {};
}

// Rows the request computed: row p predicts prompt[p + 1], so it was
// computed exactly when entry p + 1 has a distribution; the last row is
// always computed (its logits start generation).
std::vector<bool> computed_rows(const GenerationStats& stats, std::size_t n_prompt) {
  std::vector<bool> computed(n_prompt, true);
  for (std::size_t p = 0; p + 1 < n_prompt; ++p) computed[p] = stats.prompt_logprobs[p + 1].has_value();
  return computed;
}

struct Reference {
  std::vector<int32_t> greedy;
  std::vector<int32_t> continuation;
  std::vector<std::vector<float>> rows;  // [continuation][n_vocab]
};

Result<Reference> reference_run(Engine& engine, const TokenizedCase& c, int greedy_tokens, int n_vocab) {
  Reference ref;
  clear_cache(engine);
  auto greedy = run_request(engine, c.ask, greedy_tokens, plain(ReuseMode::Off), -1);
  if (!greedy) return std::unexpected(greedy.error());
  ref.greedy = greedy->tokens;
  ref.continuation = c.reference ? *c.reference : ref.greedy;
  if (ref.continuation.empty()) return fail("the reference continuation is empty");

  std::vector<int32_t> forced = c.ask;
  forced.insert(forced.end(), ref.continuation.begin(), ref.continuation.end());
  clear_cache(engine);
  auto full = run_request(engine, forced, 0, plain(ReuseMode::Off), n_vocab);
  if (!full) return std::unexpected(full.error());
  for (std::size_t i = c.ask.size(); i < forced.size(); ++i) {
    const auto& entry = full->stats.prompt_logprobs[i];
    if (!entry) return fail("the full recompute has no distribution at position " + std::to_string(i));
    auto row = dense_row(*entry, n_vocab);
    if (!row) return std::unexpected(row.error());
    ref.rows.push_back(std::move(*row));
  }
  return ref;
}

Result<ReuseVariantCase> variant_run(Engine& engine, const ReuseVariant& v, const TokenizedCase& c,
                                     const Reference& ref, const std::vector<bool>& unchanged,
                                     int greedy_tokens, int n_vocab) {
  ReuseVariantCase out;
  // The asked prompt as a client would send it: counts, computed rows, FLOPs
  // and the greedy continuation.
  if (auto ok = warm_up(engine, c); !ok) return std::unexpected(ok.error());
  auto greedy = run_request(engine, c.ask, greedy_tokens, v, 0);
  if (!greedy) return std::unexpected(greedy.error());
  out.counts = greedy->stats.reuse;
  out.greedy_match = common_prefix_length(greedy->tokens, ref.greedy);
  const std::vector<bool> computed = computed_rows(greedy->stats, c.ask.size());
  out.computed_rows = static_cast<int>(std::count(computed.begin(), computed.end(), true));
  for (std::size_t p = 0; p < computed.size(); ++p)
    if (unchanged[p] && !computed[p]) ++out.unchanged_reused;
  out.flops = greedy->stats.prefill_flops;  // blend's probes included
  out.probed = greedy->stats.blend_probed;

  // The same prompt with the continuation appended, teacher-forced.
  std::vector<int32_t> forced = c.ask;
  forced.insert(forced.end(), ref.continuation.begin(), ref.continuation.end());
  if (auto ok = warm_up(engine, c); !ok) return std::unexpected(ok.error());
  auto run = run_request(engine, forced, 0, v, n_vocab);
  if (!run) return std::unexpected(run.error());
  for (std::size_t k = 0; k < ref.rows.size(); ++k) {
    ++out.positions;
    const auto& entry = run->stats.prompt_logprobs[c.ask.size() + k];
    if (!entry) {
      ++out.missing;
      continue;
    }
    auto row = dense_row(*entry, n_vocab);
    if (!row) return std::unexpected(row.error());
    out.kl.add(kl_divergence(ref.rows[k], *row));
    if (argmax(ref.rows[k]) == argmax(*row)) ++out.top1_agree;
  }
  return out;
}

struct LoadedEngine {
  int lead = 0;
  std::unique_ptr<Engine> engine;
};

}  // namespace

std::string ReuseVariant::name() const {
  std::string n(to_string(mode));
  if (mode == ReuseMode::Blend)
    n += blend.adaptive ? " auto" : " " + std::to_string(static_cast<int>(std::lround(blend.ratio * 100))) + "%";
  if (mode >= ReuseMode::Shift) n += " lead " + std::to_string(lead);
  return n;
}

std::vector<ReuseVariant> reuse_variants(const ReuseEvalOptions& o) {
  std::vector<ReuseVariant> out;
  for (ReuseMode m : {ReuseMode::Off, ReuseMode::Prefix, ReuseMode::Shift, ReuseMode::Blend}) {
    if (std::find(o.modes.begin(), o.modes.end(), m) == o.modes.end()) continue;
    if (m < ReuseMode::Shift) {
      out.push_back({m, 0, {}});
    } else if (m == ReuseMode::Shift) {
      const std::vector<int> leads = o.leads.empty() ? std::vector<int>{ReuseOptions{}.lead} : o.leads;
      for (int lead : leads) out.push_back({m, lead, {}});
    } else {
      const std::vector<BlendChoice> ratios = o.blend_ratios.empty() ? std::vector<BlendChoice>{BlendChoice{}}
                                                                      : o.blend_ratios;
      for (int lead : o.blend_leads)
        for (const BlendChoice& b : ratios) out.push_back({m, lead, b});
    }
  }
  return out;
}

void accumulate(ReuseVariantSummary& s, const ReuseCaseResult& c, const ReuseVariantCase& v,
                double probe_cost_32) {
  ++s.cases;
  s.positions += v.positions;
  s.missing += v.missing;
  s.top1_agree += v.top1_agree;
  if (v.kl.count > 0 && (s.worst_case.empty() || v.kl.max > s.kl.max)) s.worst_case = c.id;
  s.kl.merge(v.kl);
  s.greedy_match += v.greedy_match;
  s.greedy_total += c.greedy_tokens;
  if (v.greedy_match == c.greedy_tokens) ++s.greedy_exact_cases;
  s.counts.prefix += v.counts.prefix;
  s.counts.shift += v.counts.shift;
  s.counts.recomputed += v.counts.recomputed;
  s.counts.computed += v.counts.computed;
  s.unchanged += c.unchanged_tokens;
  s.unchanged_reused += v.unchanged_reused;
  if (v.computed_rows != v.counts.computed + v.counts.recomputed) ++s.count_mismatches;
  s.flops += v.flops;
  s.probed += v.probed;
  // A running mean over cases, each weighted by its prompt length.
  const double tokens_before = static_cast<double>(s.counts.total() - v.counts.total());
  const double linear = v.counts.computed + v.counts.recomputed + v.probed * probe_cost_32;
  s.linear_share_32 = (s.linear_share_32 * tokens_before + linear) / static_cast<double>(s.counts.total());
  s.full_flops += c.full_flops;
}

Result<ReuseEvalResult> run_reuse_eval(const ReuseEvalOptions& o, const ReuseCaseSet& set) {
  if (o.greedy_tokens < 1) return fail("greedy tokens must be at least 1");
  const std::vector<ReuseVariant> variants = reuse_variants(o);
  if (variants.empty()) return fail("no reuse modes to evaluate");
  for (const auto& v : variants)
    if (v.lead < 0) return fail("a reuse lead must not be negative");

  // The tokenizer and shapes first, so a case that does not fit fails before
  // any engine is built.
  auto inputs = load_eval_inputs(o.engine.load.model_path, set, o.n_ctx, o.greedy_tokens);
  if (!inputs) return std::unexpected(inputs.error());
  const ModelConfig& config = inputs->config;
  const int n_ctx = inputs->n_ctx;
  const std::vector<TokenizedCase>& cases = inputs->cases;
  const int n_vocab = config.n_vocab;

  EngineOptions eo = o.engine;
  eo.scheduler.n_ctx = n_ctx;
  eo.scheduler.max_running = 1;
  eo.scheduler.reuse.mode = ReuseMode::Blend;  // each request names its mode
  const std::size_t block_bytes =
      kv_bytes_per_token(config, o.engine.pool.kv_types) * static_cast<std::size_t>(o.engine.pool.block_size);
  const std::size_t blocks = blocks_needed(cases, o.greedy_tokens, o.engine.pool.block_size, n_ctx);
  eo.pool.kv_memory_mb = (blocks * block_bytes + (std::size_t{1} << 20) - 1) / (std::size_t{1} << 20) + 1;

  // The lead is an engine setting: one engine per lead that a variant uses.
  std::vector<LoadedEngine> engines;
  auto engine_for = [&](int lead) -> Result<Engine*> {
    for (auto& e : engines)
      if (e.lead == lead) return e.engine.get();
    EngineOptions with = eo;
    with.scheduler.reuse.lead = lead;
    if (!engines.empty()) with.load.weights.known_fingerprint = engines.front().engine->fingerprint();
    auto e = Engine::create(with);
    if (!e) return std::unexpected(e.error());
    engines.push_back({lead, std::move(*e)});
    return engines.back().engine.get();
  };
  const int first_lead = o.leads.empty() ? ReuseOptions{}.lead : o.leads.front();
  auto base = engine_for(first_lead);
  if (!base) return std::unexpected(base.error());

  ReuseEvalResult result;
  result.model = o.engine.load.model_path;
  result.case_set = set.name;
  result.case_set_description = set.description;
  result.kv_type = kv_types_text(o.engine.pool.kv_types);
  result.n_vocab = n_vocab;
  result.n_ctx = n_ctx;
  result.block_size = o.engine.pool.block_size;
  result.min_reuse_tokens = o.engine.scheduler.reuse.min_reuse_tokens;
  result.greedy_tokens = o.greedy_tokens;
  result.variants = variants;
  result.summary.resize(variants.size());
  const PrefillFlops flops(config);
  const int probe_layer = std::clamp(eo.scheduler.reuse.blend_layer, 1, std::max(1, config.n_layers - 1));
  const double probe_cost_32 = (probe_layer + flops.v_share_of_layer()) / 32.0;

  for (std::size_t i = 0; i < cases.size(); ++i) {
    const TokenizedCase& c = cases[i];
    const ReuseCase& spec = set.cases[i];
    auto where = [&](const Error& e) { return fail(case_name(spec, i) + ": " + e.message); };
    ReuseCaseResult cr;
    cr.id = spec.id;
    cr.note = spec.note;
    for (const auto& w : c.warm) cr.warm_tokens.push_back(static_cast<int>(w.size()));
    cr.ask_tokens = static_cast<int>(c.ask.size());
    const std::vector<bool> unchanged = unchanged_tokens(c.ask, c.warm, o.engine.scheduler.reuse.min_reuse_tokens);
    cr.unchanged_tokens = static_cast<int>(std::count(unchanged.begin(), unchanged.end(), true));
    cr.full_flops = flops.full(cr.ask_tokens);

    auto ref = reference_run(**base, c, o.greedy_tokens, n_vocab);
    if (!ref) return where(ref.error());
    cr.continuation_tokens = static_cast<int>(ref->continuation.size());
    cr.greedy_tokens = static_cast<int>(ref->greedy.size());

    for (std::size_t k = 0; k < variants.size(); ++k) {
      auto engine = engine_for(variants[k].mode >= ReuseMode::Shift ? variants[k].lead : first_lead);
      if (!engine) return std::unexpected(engine.error());
      auto v = variant_run(**engine, variants[k], c, *ref, unchanged, o.greedy_tokens, n_vocab);
      if (!v) return where(Error{variants[k].name() + ": " + v.error().message});
      cr.variants.push_back(*v);
    }
    for (std::size_t k = 0; k < variants.size(); ++k)
      accumulate(result.summary[k], cr, cr.variants[k], probe_cost_32);
    result.cases.push_back(std::move(cr));
    if (o.on_case) o.on_case(i, cases.size());
  }
  return result;
}

}  // namespace clm
