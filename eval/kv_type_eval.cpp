#include "kv_type_eval.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "engine/engine.h"
#include "eval_requests.h"
#include "report_numbers.h"

namespace clm {

namespace {

GenerateOptions reuse_off() {
  GenerateOptions g;
  g.overrides.reuse = ReuseMode::Off;
  return g;
}

// The distributions of ask + continuation at the continuation's positions.
Result<std::vector<std::vector<float>>> forced_rows(Engine& engine, const std::vector<int32_t>& ask,
                                                    const std::vector<int32_t>& continuation, int n_vocab) {
  std::vector<int32_t> forced = ask;
  forced.insert(forced.end(), continuation.begin(), continuation.end());
  clear_cache(engine);
  auto run = run_request(engine, forced, 0, reuse_off(), n_vocab);
  if (!run) return std::unexpected(run.error());
  std::vector<std::vector<float>> rows;
  for (std::size_t i = ask.size(); i < forced.size(); ++i) {
    const auto& entry = run->stats.prompt_logprobs[i];
    if (!entry) return fail("no distribution at position " + std::to_string(i));
    auto row = dense_row(*entry, n_vocab);
    if (!row) return std::unexpected(row.error());
    rows.push_back(std::move(*row));
  }
  return rows;
}

// The cases of either kind of set, tokenized, with their set's name and ids.
struct NamedCases {
  std::string set_name;
  std::vector<std::string> ids;
  EvalInputs inputs;
};

Result<KvTypeEvalResult> evaluate(const KvTypeEvalOptions& o, const NamedCases& named) {
  const int n_ctx = named.inputs.n_ctx;
  const std::vector<TokenizedCase>& cases = named.inputs.cases;
  const int n_vocab = named.inputs.config.n_vocab;

  // Two engines on one set of weights, differing only in their K/V types;
  // the pool of each holds one full context (nothing is reused).
  auto engine_for = [&](KvTypes types, const Engine* first) {
    EngineOptions eo = o.engine;
    eo.scheduler.n_ctx = n_ctx;
    eo.pool.kv_types = types;
    eo.scheduler.max_running = 1;
    if (first) eo.load.weights.known_fingerprint = first->fingerprint();
    return Engine::create(eo);
  };
  auto reference = engine_for(o.reference, nullptr);
  if (!reference) return std::unexpected(reference.error());
  auto tested = engine_for(o.tested, reference->get());
  if (!tested) return std::unexpected(tested.error());

  KvTypeEvalResult r;
  r.model = o.engine.load.model_path;
  r.case_set = named.set_name;
  r.reference = kv_types_text(o.reference);
  r.tested = kv_types_text(o.tested);
  double nll_ref = 0.0, nll_test = 0.0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const TokenizedCase& c = cases[i];
    auto where = [&](const std::string& who, const Error& e) {
      return fail("case " + std::to_string(i) + " (" + named.ids[i] + "), " + who + ": " + e.message);
    };
    clear_cache(**reference);
    auto greedy_ref = run_request(**reference, c.ask, o.greedy_tokens, reuse_off(), -1);
    if (!greedy_ref) return where(r.reference, greedy_ref.error());
    clear_cache(**tested);
    auto greedy_test = run_request(**tested, c.ask, o.greedy_tokens, reuse_off(), -1);
    if (!greedy_test) return where(r.tested, greedy_test.error());
    r.greedy_match += common_prefix_length(greedy_test->tokens, greedy_ref->tokens);
    r.greedy_total += static_cast<long>(greedy_ref->tokens.size());

    const std::vector<int32_t>& cont = c.reference ? *c.reference : greedy_ref->tokens;
    if (cont.empty()) return fail("case " + std::to_string(i) + " (" + named.ids[i] + "): the continuation is empty");
    auto p = forced_rows(**reference, c.ask, cont, n_vocab);
    if (!p) return where(r.reference, p.error());
    auto q = forced_rows(**tested, c.ask, cont, n_vocab);
    if (!q) return where(r.tested, q.error());
    KlSummary kl;
    for (std::size_t k = 0; k < cont.size(); ++k) {
      const auto& pk = (*p)[k];
      const auto& qk = (*q)[k];
      kl.add(kl_divergence(pk, qk));
      r.top1_agree += argmax(pk) == argmax(qk);
      const auto tok = static_cast<std::size_t>(cont[k]);
      nll_ref -= static_cast<double>(pk[tok]);
      nll_test -= static_cast<double>(qk[tok]);
      ++r.positions;
    }
    if (kl.count > 0 && (r.worst_case.empty() || kl.max > r.kl.max)) r.worst_case = named.ids[i];
    r.kl.merge(kl);
    ++r.cases;
    if (o.on_case) o.on_case(i, cases.size());
  }
  if (r.positions > 0) {
    r.nll_reference = nll_ref / r.positions;
    r.nll_tested = nll_test / r.positions;
  }
  return r;
}

}  // namespace

Result<KvTypeEvalResult> run_kv_type_eval(const KvTypeEvalOptions& o, const ReuseCaseSet& set) {
  if (o.greedy_tokens < 1) return fail("greedy tokens must be at least 1");
  auto inputs = load_eval_inputs(o.engine.load.model_path, set, o.n_ctx, o.greedy_tokens);
  if (!inputs) return std::unexpected(inputs.error());
  NamedCases named{set.name, {}, std::move(*inputs)};
  for (const ReuseCase& c : set.cases) named.ids.push_back(c.id);
  return evaluate(o, named);
}

Result<KvTypeEvalResult> run_kv_type_eval(const KvTypeEvalOptions& o, const EvictCaseSet& set) {
  if (o.greedy_tokens < 1) return fail("greedy tokens must be at least 1");
  auto inputs = load_text_eval_inputs(o.engine.load.model_path, set, o.n_ctx, o.text_ask_tokens, o.greedy_tokens);
  if (!inputs) return std::unexpected(inputs.error());
  NamedCases named{set.name, {}, std::move(*inputs)};
  for (const EvictCase& c : set.cases) named.ids.push_back(c.id);
  return evaluate(o, named);
}

std::string to_markdown(const KvTypeEvalResult& r) {
  std::string out = "model `" + r.model + "`, cases `" + r.case_set + "`: KV " + r.tested + " against " +
                    r.reference + ", " + std::to_string(r.cases) + " cases, " + std::to_string(r.positions) +
                    " teacher-forced positions\n\n";
  out += "| mean KL | max KL (case) | top-1 | NLL " + r.reference + " | NLL " + r.tested + " | ΔNLL | greedy match |\n";
  out += "|---|---|---|---|---|---|---|\n";
  const double greedy =
      r.greedy_total == 0 ? 0.0 : static_cast<double>(r.greedy_match) / static_cast<double>(r.greedy_total);
  out += "| " + sci(r.kl.mean()) + " | " + sci(r.kl.max) + " (" + r.worst_case + ") | " + format("%.4f", r.top1()) +
         " | " + format("%.4f", r.nll_reference) + " | " + format("%.4f", r.nll_tested) + " | " +
         format("%+.2e", r.nll_tested - r.nll_reference) + " | " + format("%.4f", greedy) + " |\n";
  return out;
}

nlohmann::json to_json(const KvTypeEvalResult& r) {
  return {{"model", r.model},
          {"case_set", r.case_set},
          {"reference", r.reference},
          {"tested", r.tested},
          {"cases", r.cases},
          {"positions", r.positions},
          {"mean_kl", r.kl.mean()},
          {"max_kl", r.kl.max},
          {"worst_case", r.worst_case},
          {"top1", r.top1()},
          {"nll_reference", r.nll_reference},
          {"nll_tested", r.nll_tested},
          {"delta_nll", r.nll_tested - r.nll_reference},
          {"greedy_match", r.greedy_match},
          {"greedy_total", r.greedy_total}};
}

}  // namespace clm
