// Pieces of JSON that several benchmark reports share: a time summary in
// milliseconds and the reuse breakdown of prompt tokens.
#pragma once

#include <nlohmann/json.hpp>

#include "bench_stats.h"
#include "cache/reuse_plan.h"

namespace clm {

// {median, mean, stddev, min, max, n}, times in ms.
nlohmann::json summary_ms_json(const Summary& s);
// The same with the 90th percentile as "p90".
nlohmann::json summary_ms_json(const Summary& s, double p90_s);
// {prefix, shift, recomputed, computed}
nlohmann::json reuse_counts_json(const ReuseCounts& c);

}  // namespace clm
