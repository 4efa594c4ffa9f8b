#include "dialogue_bench.h"

#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <vector>

#include "cache/kv_pool.h"
#include "dialogue_text.h"
#include "model/model.h"
#include "scheduler_rig.h"

namespace clm {

namespace {

std::vector<int32_t> concat(std::initializer_list<const std::vector<int32_t>*> parts) {
  std::vector<int32_t> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

Status time_to_first_token(Model& model, ThreadPool& threads, const DialogueBenchOptions& o, DialogueBenchResult& r) {
  const Tokenizer& tok = model.tokenizer();
  const int total = 1 + o.history_tokens + o.question_tokens;
  RigOptions ro;
  ro.block_size = o.engine.pool.block_size;
  ro.max_batch_tokens = o.engine.scheduler.max_batch_tokens;
  ro.n_blocks = static_cast<std::size_t>(4 * (total / o.engine.pool.block_size + 2));
  ro.max_running = 4;
  auto rig = make_scheduler_rig(model, threads, ro);
  if (!rig) return std::unexpected(rig.error());
  std::vector<int32_t> history{tok.bos_id() >= 0 ? tok.bos_id() : 0};
  const auto h = dialogue_tokens(tok, o.history_tokens, 1);
  history.insert(history.end(), h.begin(), h.end());
  std::vector<double> cold, warm;
  for (int rep = 0; rep < o.repetitions; ++rep) {
    // Cold: nothing resident.
    rig->cache->clear_cached();
    const auto q1 = question_tokens(tok, o.question_tokens, 2 * rep);
    auto c = run_to_end(*rig->scheduler, fixed_length_request(concat({&history, &q1}), 1));
    if (!c) return std::unexpected(c.error());
    cold.push_back(c->time_to_first_token_s);
    // Warm: the history is resident from the previous turn; a new question follows it.
    const auto q2 = question_tokens(tok, o.question_tokens, 2 * rep + 1);
    auto w = run_to_end(*rig->scheduler, fixed_length_request(concat({&history, &q2}), 1));
    if (!w) return std::unexpected(w.error());
    warm.push_back(w->time_to_first_token_s);
    r.warm_cached_tokens = w->cached_tokens;
  }
  r.cold_ttft_s = summarize(cold);
  r.warm_ttft_s = summarize(warm);
  return {};
}

}  // namespace

Result<SessionRun> run_sessions(Model& model, ThreadPool& threads, const DialogueBenchOptions& o, bool share) {
  SessionPlan plan;
  plan.sessions = o.sessions;
  plan.system_tokens = o.system_tokens;
  plan.turns = o.turns;
  plan.user_tokens = o.user_tokens;
  plan.reply_tokens = o.reply_tokens;
  plan.share = share;
  plan.block_size = o.engine.pool.block_size;
  plan.max_batch_tokens = o.engine.scheduler.max_batch_tokens;
  return drive_sessions(model, threads, plan);
}

Result<DialogueBenchResult> run_dialogue_bench(const DialogueBenchOptions& o) {
  if (o.history_tokens < 1 || o.question_tokens < 1 || o.sessions < 1 || o.system_tokens < 2 || o.turns < 1 ||
      o.user_tokens < 1 || o.reply_tokens < 1 || o.repetitions < 1 || o.engine.pool.block_size < 1)
    return fail("bench dialogue: every size must be positive");
  auto model = Model::load(o.engine.load.model_path);
  if (!model) return fail(model.error().message);
  ThreadPool threads(o.engine.load.n_threads > 0 ? o.engine.load.n_threads : hardware_threads());
  DialogueBenchResult r;
  r.model = std::filesystem::path(o.engine.load.model_path).filename().string();  // no machine path in reports
  const ModelConfig& c = (*model)->config();
  r.block_bytes = KvGeometry{c.n_layers, c.n_kv_heads, c.head_dim, o.engine.pool.block_size, KvType::F16}.block_bytes();

  std::fprintf(stderr, "bench dialogue (a): %d-token history + %d-token question, %d repetitions\n",
               o.history_tokens, o.question_tokens, o.repetitions);
  if (auto ok = time_to_first_token(**model, threads, o, r); !ok) return std::unexpected(ok.error());
  std::fprintf(stderr, "bench dialogue (b): %d sessions sharing a %d-token system prompt, with sharing\n", o.sessions,
               o.system_tokens);
  auto shared = run_sessions(**model, threads, o, true);
  if (!shared) return std::unexpected(shared.error());
  r.shared = *shared;
  std::fprintf(stderr, "bench dialogue (b): the same without sharing\n");
  auto unshared = run_sessions(**model, threads, o, false);
  if (!unshared) return std::unexpected(unshared.error());
  r.unshared = *unshared;
  return r;
}

namespace {
nlohmann::json session_json(const SessionRun& s, std::size_t block_bytes) {
  nlohmann::json j = session_run_json(s, block_bytes);
  j["decode_only_tokens_per_second"] = s.decode_only_tokens_per_s;
  j["ideal_kv_blocks_at_peak"] = s.ideal_blocks;
  return j;
}
}  // namespace

nlohmann::json to_json(const DialogueBenchOptions& o, const DialogueBenchResult& r) {
  return {{"model", r.model},
          {"block_size", o.engine.pool.block_size},
          {"ttft",
           {{"history_tokens", o.history_tokens},
            {"question_tokens", o.question_tokens},
            {"cold_ms_median", r.cold_ttft_s.median * 1e3},
            {"warm_ms_median", r.warm_ttft_s.median * 1e3},
            {"warm_over_cold", r.warm_ttft_s.median / r.cold_ttft_s.median},
            {"warm_cached_tokens", r.warm_cached_tokens}}},
          {"sessions",
           {{"sessions", o.sessions},
            {"system_tokens", o.system_tokens},
            {"turns", o.turns},
            {"with_sharing", session_json(r.shared, r.block_bytes)},
            {"without_sharing", session_json(r.unshared, r.block_bytes)},
            {"memory_with_over_without",
             static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.unshared.peak_blocks)},
            {"memory_with_over_ideal",
             static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.shared.ideal_blocks)}}}};
}

std::string to_markdown(const DialogueBenchOptions& o, const DialogueBenchResult& r) {
  char buf[4096];
  const double mib = static_cast<double>(r.block_bytes) / (1 << 20);
  std::snprintf(
      buf, sizeof buf,
      "### (a) time to first token, %d-token history + %d-token question (median of %d)\n\n"
      "| cache | TTFT (ms) | tokens reused |\n|---|---:|---:|\n"
      "| cold | %.1f | 0 |\n| history cached | %.1f | %d |\n\n**warm / cold = %.3f**\n\n"
      "### (b) %d sessions sharing a %d-token system prompt, %d turns each\n\n"
      "| | generated tok/s | TTFT p50 (ms) | TTFT p95 (ms) | peak KV blocks | peak KV MiB | ideal blocks |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n"
      "| with sharing | %.1f | %.1f | %.1f | %zu | %.1f | %zu |\n"
      "| without sharing | %.1f | %.1f | %.1f | %zu | %.1f | %zu |\n\n"
      "**KV memory with sharing / without = %.3f; with sharing / ideal = %.3f**\n",
      o.history_tokens, o.question_tokens, o.repetitions, r.cold_ttft_s.median * 1e3, r.warm_ttft_s.median * 1e3,
      r.warm_cached_tokens, r.warm_ttft_s.median / r.cold_ttft_s.median, o.sessions, o.system_tokens, o.turns,
      r.shared.tokens_per_s, r.shared.ttft_p50_s * 1e3, r.shared.ttft_p95_s * 1e3, r.shared.peak_blocks,
      static_cast<double>(r.shared.peak_blocks) * mib, r.shared.ideal_blocks, r.unshared.tokens_per_s,
      r.unshared.ttft_p50_s * 1e3, r.unshared.ttft_p95_s * 1e3, r.unshared.peak_blocks,
      static_cast<double>(r.unshared.peak_blocks) * mib, r.unshared.ideal_blocks,
      static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.unshared.peak_blocks),
      static_cast<double>(r.shared.peak_blocks) / static_cast<double>(r.shared.ideal_blocks));
  return buf;
}

}  // namespace clm
