// A strict reader of the Prometheus text exposition format, for tests that
// check what /metrics and MetricsRegistry print: every line must parse, every
// sample must belong to a family declared by a TYPE line before it, and
// histogram buckets must be cumulative and end at +Inf equal to _count.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace clm::test {

struct PromSample {
  std::string name;  // as printed, with _bucket/_sum/_count
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

struct PromText {
  std::map<std::string, std::string> types;  // family -> counter, gauge, histogram...
  std::map<std::string, std::string> help;
  std::vector<PromSample> samples;
  // Sum of the samples with this name whose labels include all of `labels`.
  double sum(const std::string& name, const std::map<std::string, std::string>& labels = {}) const;
  bool has(const std::string& name) const;
};

// Empty error string on success.
PromText parse_prometheus_text(const std::string& text, std::string& error);

}  // namespace clm::test
