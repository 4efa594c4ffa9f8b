// The results of `clmcache bench reuse` as JSON and as a Markdown table.
#include <cstdio>
#include <string>

#include "report_json.h"
#include "reuse_bench.h"

namespace clm {

namespace {

std::string change_of(const ReuseBenchOptions& o, const ReuseBenchResult& r, const std::string& scenario) {
  const std::string k = std::to_string(o.edit_tokens);
  if (scenario == "edit") return "first " + k + " tokens after BOS replaced";
  if (scenario == "insert") return k + " tokens inserted at token " + std::to_string(r.insert_at);
  return "first " + k + " tokens after BOS deleted";
}

}  // namespace

nlohmann::json to_json(const ReuseBenchOptions& o, const ReuseBenchResult& r) {
  nlohmann::json scenarios = nlohmann::json::array();
  for (const ReuseScenarioResult& s : r.scenarios) {
    nlohmann::json modes = nlohmann::json::object();
    for (const ReuseModeRuns& m : s.modes)
      modes[std::string(to_string(m.mode))] = {{"ttft_ms", summary_ms_json(m.ttft_s)},
                                               {"reuse", reuse_counts_json(m.reuse)},
                                               {"greedy_tokens", m.greedy},
                                               {"greedy_agree_with_off", m.agree_with_off}};
    scenarios.push_back({{"name", s.name},
                         {"change", change_of(o, r, s.name)},
                         {"prompt_tokens", s.prompt_tokens},
                         {"modes", modes},
                         {"prefix_over_off", s.ratio_to_off(ReuseMode::Prefix)},
                         {"shift_over_off", s.ratio_to_off(ReuseMode::Shift)}});
  }
  return {{"model", r.model},
          {"threads", r.n_threads},
          {"block_size", o.engine.pool.block_size},
          {"base_tokens", o.prompt_tokens},
          {"edit_tokens", o.edit_tokens},
          {"repetitions", o.repetitions},
          {"reuse_lead", o.reuse_lead},
          {"agree_tokens", o.agree_tokens},
          {"scenarios", scenarios}};
}

std::string to_markdown(const ReuseBenchOptions& o, const ReuseBenchResult& r) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "### Time to first token after a cached %d-token conversation changed (median of %d, lead %d)\n\n",
                o.prompt_tokens, o.repetitions, o.reuse_lead);
  std::string out = buf;
  out +=
      "| scenario | mode | TTFT (ms) | min–max (ms) | / off | prefix | shift | recomputed | computed | greedy = off |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const ReuseScenarioResult& s : r.scenarios) {
    for (const ReuseModeRuns& m : s.modes) {
      const Summary& t = m.ttft_s;
      const std::string agree = m.mode == ReuseMode::Off
                                    ? "—"
                                    : std::to_string(m.agree_with_off) + "/" + std::to_string(m.greedy.size());
      std::snprintf(buf, sizeof buf, "| %s | %s | %.1f | %.1f–%.1f | %.3f | %d | %d | %d | %d | %s |\n",
                    s.name.c_str(), std::string(to_string(m.mode)).c_str(), t.median * 1e3, t.min * 1e3, t.max * 1e3,
                    s.ratio_to_off(m.mode), m.reuse.prefix, m.reuse.shift, m.reuse.recomputed, m.reuse.computed,
                    agree.c_str());
      out += buf;
    }
  }
  out += "\nPrompts: ";
  for (std::size_t i = 0; i < r.scenarios.size(); ++i) {
    const ReuseScenarioResult& s = r.scenarios[i];
    out += (i ? "; " : "") + s.name + " = " + change_of(o, r, s.name) + " (" + std::to_string(s.prompt_tokens) +
           " tokens)";
  }
  out += ". \"greedy = off\": leading generated tokens equal to those of mode off.\n\n";
  for (const ReuseScenarioResult& s : r.scenarios) {
    std::snprintf(buf, sizeof buf, "**%s: shift / off = %.3f, prefix / off = %.3f**%s\n\n", s.name.c_str(),
                  s.ratio_to_off(ReuseMode::Shift), s.ratio_to_off(ReuseMode::Prefix),
                  s.name == "edit" ? " (target: shift / off ≤ 0.15)" : "");
    out += buf;
  }
  out.pop_back();  // one newline at the end
  return out;
}

}  // namespace clm
