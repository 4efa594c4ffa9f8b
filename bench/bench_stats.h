// Summary statistics of repeated measurements, as a benchmark reports them:
// the median as the headline (robust to a noisy machine) and the spread.
#pragma once

#include <vector>

namespace clm {

struct Summary {
  double median = 0.0;
  double mean = 0.0;
  double stddev = 0.0;
  double min = 0.0;
  double max = 0.0;
  int n = 0;
};

Summary summarize(std::vector<double> values);
// Percentile in [0, 100] by linear interpolation between closest ranks.
double percentile(std::vector<double> values, double pct);

}  // namespace clm
