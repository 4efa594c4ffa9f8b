#include "report_json.h"

namespace clm {

nlohmann::json summary_ms_json(const Summary& s) {
  return {{"median", s.median * 1e3}, {"mean", s.mean * 1e3}, {"stddev", s.stddev * 1e3},
          {"min", s.min * 1e3},       {"max", s.max * 1e3},   {"n", s.n}};
}

nlohmann::json summary_ms_json(const Summary& s, double p90_s) {
  nlohmann::json j = summary_ms_json(s);
  j["p90"] = p90_s * 1e3;
  return j;
}

nlohmann::json reuse_counts_json(const ReuseCounts& c) {
  return {{"prefix", c.prefix}, {"shift", c.shift}, {"recomputed", c.recomputed}, {"computed", c.computed}};
}

}  // namespace clm
