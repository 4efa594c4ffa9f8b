#include "evict_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "kernels/kv_row_move.h"
#include "kernels/rope_shift.h"
#include "model/kv_view.h"
#include "model/model.h"
#include "model/model_config.h"

namespace clm {

namespace {

constexpr int kKvBlock = 16;  // tokens per block of the evaluation's own KV arena

// One sequence's KV: its own arena, with every slot's position in the view;
// a forgotten slot's position becomes kEmptySlot, so attention skips it.
struct EvalSequence {
  EvalSequence(const KvGeometry& geometry, int n_slots) : g(geometry) {
    const std::size_t n_blocks = static_cast<std::size_t>((n_slots + g.block_size - 1) / g.block_size);
    arena.resize(n_blocks * g.block_bytes());
    for (std::size_t b = 0; b < n_blocks; ++b) blocks.push_back(arena.data() + b * g.block_bytes());
    positions.assign(static_cast<std::size_t>(n_slots), kEmptySlot);
    mass.assign(positions.size(), 0.0f);
    queries.assign(positions.size(), 0);
  }
  KvGeometry g;
  std::vector<std::byte> arena;
  std::vector<std::byte*> blocks;
  std::vector<int32_t> positions;
  std::vector<float> mass;
  std::vector<uint32_t> queries;

  KvSeqView view(bool stats) {
    KvSeqView v{blocks, positions};
    if (stats) {
      v.slot_mass = mass;
      v.slot_queries = queries;
    }
    return v;
  }
};

// Renumbers the live slots of `seq` 0, 1, ... in slot order, re-rotating
// each moved token's K by its position change (the engine's own rows move
// with the same kernel, KvCacheManager::compact_positions); returns the
// next position.
int32_t compact(EvalSequence& seq, const RopeShiftParams& rope) {
  const KvGeometry& g = seq.g;
  const std::size_t bs = static_cast<std::size_t>(g.block_size);
  int32_t next = 0;
  for (std::size_t s = 0; s < seq.positions.size(); ++s) {
    const int32_t old = seq.positions[s];
    if (old == kEmptySlot) continue;
    const int32_t delta = next - old;
    if (delta != 0) {
      std::byte* block = seq.blocks[s / bs];
      const int32_t row = static_cast<int32_t>(s % bs);
      move_kv_rows(g, {block, row, block, row, 1}, rope, make_rope_shift_table(rope, delta));
      seq.positions[s] = next;
    }
    ++next;
  }
  return next;
}

struct CaseRun {
  std::vector<double> nll;     // per continuation token
  std::vector<int32_t> top1;   // the most likely token at each
  int live_prompt_tokens = 0;  // prompt tokens still attended when scoring
};

double nll_of(std::span<const float> row, int32_t target) {
  const float max = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - max);
  return std::log(sum) + max - row[static_cast<std::size_t>(target)];
}

// Prefills ids[0, P - 1) in chunks, forgetting by `policy` (when given) between chunks,
// then teacher-forces ids[P - 1, P - 1 + C) and scores ids[P, P + C).
// With `compact`, the kept tokens are renumbered after every eviction.
Result<CaseRun> run_case(Model& model, ThreadPool& tp, const KvGeometry& g, const std::vector<int32_t>& ids, int P,
                         int C, int chunk, EvictPolicy* policy, int budget_tokens, bool compact_positions) {
  const Tokenizer& tok = model.tokenizer();
  EvalSequence seq(g, P + C);
  const bool stats = policy != nullptr && (policy->options().kind == EvictKind::Attention ||
                                           policy->options().kind == EvictKind::H2O);
  auto forward = [&](const Batch& batch, std::span<float> logits) -> Status {
    const std::vector<KvSeqView> views{seq.view(stats)};
    return model.forward(batch, KvView{g, views}, logits, tp);
  };
  const int prefix = P - 1;
  const RopeShiftParams rope = rope_shift_params(model.config());
  int32_t next_pos = 0;  // the position of the next token processed
  for (int begin = 0; begin < prefix; begin += chunk) {
    const int end = std::min(prefix, begin + chunk);
    Batch batch;
    for (int i = begin; i < end; ++i) {
      seq.positions[static_cast<std::size_t>(i)] = next_pos;
      batch.add(ids[static_cast<std::size_t>(i)], next_pos++, 0, i, false);
    }
    if (auto ok = forward(batch, {}); !ok) return std::unexpected(ok.error());
    if (policy == nullptr) continue;
    std::vector<std::string> pieces;
    for (int i = begin; i < end; ++i) pieces.push_back(tok.token_to_piece(ids[static_cast<std::size_t>(i)]));
    policy->append(pieces);
    if (policy->aggregation_due()) policy->aggregate(seq.mass, seq.queries);
    const auto evicted = policy->fit_budget(budget_tokens);
    for (const EvictedBlock& b : evicted)
      for (int s = b.first_slot; s < b.first_slot + b.n_slots; ++s) seq.positions[static_cast<std::size_t>(s)] = kEmptySlot;
    if (compact_positions && !evicted.empty()) next_pos = compact(seq, rope);
  }
  CaseRun out;
  for (int i = 0; i < prefix; ++i) out.live_prompt_tokens += seq.positions[static_cast<std::size_t>(i)] != kEmptySlot;
  Batch batch;
  for (int i = prefix; i < prefix + C; ++i) {
    seq.positions[static_cast<std::size_t>(i)] = next_pos;
    batch.add(ids[static_cast<std::size_t>(i)], next_pos++, 0, i, true);
  }
  const std::size_t V = static_cast<std::size_t>(model.config().n_vocab);
  std::vector<float> logits(static_cast<std::size_t>(C) * V);
  if (auto ok = forward(batch, logits); !ok) return std::unexpected(ok.error());
  for (int j = 0; j < C; ++j) {
    const std::span<const float> row(logits.data() + static_cast<std::size_t>(j) * V, V);
    out.nll.push_back(nll_of(row, ids[static_cast<std::size_t>(P + j)]));
    out.top1.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
  }
  return out;
}

}  // namespace

double EvictVariantResult::delta_nll_mean() const {
  if (case_delta_nll.empty()) return 0.0;
  double sum = 0.0;
  for (double d : case_delta_nll) sum += d;
  return sum / static_cast<double>(case_delta_nll.size());
}

double EvictVariantResult::delta_nll_stderr() const {
  const std::size_t n = case_delta_nll.size();
  if (n < 2) return 0.0;
  const double mean = delta_nll_mean();
  double ss = 0.0;
  for (double d : case_delta_nll) ss += (d - mean) * (d - mean);
  return std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n));
}

Result<EvictEvalResult> run_evict_eval(const EvictEvalOptions& o, const EvictCaseSet& cases) {
  if (o.prompt_tokens < 2) return fail("eval evict: the prompt needs at least 2 tokens");
  if (o.continuation_tokens < 1) return fail("eval evict: the continuation needs at least 1 token");
  if (o.chunk_tokens < 1) return fail("eval evict: chunks need at least 1 token");
  for (double b : o.budgets)
    if (!(b > 0.0 && b <= 1.0)) return fail("eval evict: a budget must be a share in (0, 1]");
  // Checks the shared settings (and the protect rules) once, before any work.
  if (auto p = EvictPolicy::create(o.policy); !p) return fail("eval evict: " + p.error().message);

  auto loaded = Model::load(o.model_path);
  if (!loaded) return fail(loaded.error().message);
  Model& model = **loaded;
  const ModelConfig& c = model.config();
  const int P = o.prompt_tokens, C = o.continuation_tokens;
  if (c.n_ctx_train > 0 && P + C > c.n_ctx_train)
    return fail("eval evict: prompt + continuation (" + std::to_string(P + C) + " tokens) exceed the model's context of " +
                std::to_string(c.n_ctx_train));
  const KvGeometry g{c.n_layers, c.n_kv_heads, c.head_dim, kKvBlock, o.kv_types};
  const int threads = o.n_threads > 0 ? o.n_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool tp(threads);

  EvictEvalResult r;
  r.case_set = cases.name;
  r.cases = static_cast<int>(cases.cases.size());
  r.prompt_tokens = P;
  r.continuation_tokens = C;
  r.policy = o.policy;
  r.compact_positions = o.compact_positions;
  for (EvictKind kind : o.policies)
    for (double b : o.budgets) {
      EvictVariantResult v;
      v.kind = kind;
      v.budget = b;
      r.variants.push_back(v);
    }
  double full_nll_sum = 0.0;
  for (std::size_t ci = 0; ci < cases.cases.size(); ++ci) {
    const EvictCase& ec = cases.cases[ci];
    const auto ids = model.tokenizer().encode(ec.text, /*add_special=*/true, /*parse_special=*/false);
    if (static_cast<int>(ids.size()) < P + C)
      return fail("eval evict: case " + ec.id + " has " + std::to_string(ids.size()) + " tokens, fewer than prompt + continuation (" +
                  std::to_string(P + C) + ")");
    auto full = run_case(model, tp, g, ids, P, C, o.chunk_tokens, nullptr, 0, false);
    if (!full) return fail("eval evict: case " + ec.id + ": " + full.error().message);
    for (double x : full->nll) full_nll_sum += x;
    for (EvictVariantResult& v : r.variants) {
      EvictOptions po = o.policy;
      po.kind = v.kind;
      auto policy = EvictPolicy::create(po);
      if (!policy) return fail("eval evict: " + policy.error().message);
      const int budget = static_cast<int>(std::lround(v.budget * P));
      auto run = run_case(model, tp, g, ids, P, C, o.chunk_tokens, &*policy, budget, o.compact_positions);
      if (!run) return fail("eval evict: case " + ec.id + ": " + run.error().message);
      double delta = 0.0;
      for (int j = 0; j < C; ++j) {
        delta += run->nll[static_cast<std::size_t>(j)] - full->nll[static_cast<std::size_t>(j)];
        v.top1_agree += run->top1[static_cast<std::size_t>(j)] == full->top1[static_cast<std::size_t>(j)];
      }
      v.case_delta_nll.push_back(delta / C);
      v.positions += C;
      v.kept_share += static_cast<double>(run->live_prompt_tokens) / (P - 1);
    }
    if (o.on_case) o.on_case(ci, cases.cases.size());
  }
  for (EvictVariantResult& v : r.variants) v.kept_share /= std::max(1, r.cases);
  r.full_nll = full_nll_sum / (static_cast<double>(r.cases) * C);
  return r;
}

std::string evict_markdown(const EvictEvalResult& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "Case set `%s`: %d cases, prompt %d tokens, %d continuation tokens teacher-forced; "
                "full-cache NLL %.4f nats/token; positions %s.\n",
                r.case_set.c_str(), r.cases, r.prompt_tokens, r.continuation_tokens, r.full_nll,
                r.compact_positions ? "compacted after each eviction (K re-rotated)" : "kept");
  out += line;
  const EvictOptions& p = r.policy;
  std::snprintf(line, sizeof line,
                "Policy blocks of %d tokens, aggregation every %d tokens (decay %.2f), candidates under %.2f x mean, "
                "%d sink block(s), recent window %d tokens, top %.0f%% of the last %d aggregations kept, %zu protect "
                "rule(s) (%s, at most %.0f%% of the budget); over a budget the recent window widens to %.2f x the "
                "forgotten share x the budget.\n\n",
                p.block_tokens, p.aggregate_every, p.decay, p.candidate_fraction, p.sink_blocks, p.recent_tokens,
                100.0 * p.top_share, p.top_history, p.protect_patterns.size(),
                p.protect_first_only ? "first occurrences" : "every occurrence", 100.0 * p.protect_share,
                p.window_scale);
  out += line;
  out += "| policy | budget | prompt kept | ΔNLL/token | ± s.e. | top-1 agreement |\n";
  out += "|---|---:|---:|---:|---:|---:|\n";
  for (const EvictVariantResult& v : r.variants) {
    std::snprintf(line, sizeof line, "| %s | %.0f%% | %.1f%% | %+.4f | %.4f | %.3f |\n",
                  std::string(evict_kind_name(v.kind)).c_str(), 100.0 * v.budget, 100.0 * v.kept_share,
                  v.delta_nll_mean(), v.delta_nll_stderr(), v.top1_agreement());
    out += line;
  }
  return out;
}

}  // namespace clm
