// MetricsRegistry: counters, gauges and histograms with labels, rendered in
// the Prometheus text exposition format (version 0.0.4). Families are
// declared once with their help text; series appear on first use. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace clm {

// Label name and value pairs, in the order they are printed.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class MetricsRegistry {
 public:
  void define_counter(const std::string& name, const std::string& help);
  void define_gauge(const std::string& name, const std::string& help);
  // bounds: the upper bounds of the buckets, ascending; +Inf is implied.
  void define_histogram(const std::string& name, const std::string& help, std::vector<double> bounds);

  // Using a name that was not defined with that type is a bug and aborts.
  void add(const std::string& name, const MetricLabels& labels, double delta = 1.0);
  // A counter that mirrors a running total kept elsewhere (a stats
  // snapshot): takes `total` unless that would lower it, since scrapes may
  // race with an older snapshot.
  void set_counter(const std::string& name, const MetricLabels& labels, double total);
  void set(const std::string& name, const MetricLabels& labels, double value);
  void observe(const std::string& name, const MetricLabels& labels, double value);

  // A counter's or gauge's value (0 if the series does not exist yet).
  double value(const std::string& name, const MetricLabels& labels = {}) const;
  std::string render() const;

 private:
  enum class Type { Counter, Gauge, Histogram };
  struct Series {
    double value = 0.0;                 // counter, gauge
    std::vector<uint64_t> bucket_counts;  // histogram, not cumulative; last is +Inf
    double sum = 0.0;
    uint64_t count = 0;
  };
  struct Family {
    Type type = Type::Counter;
    std::string help;
    std::vector<double> bounds;
    std::map<MetricLabels, Series> series;
  };
  Family& family(const std::string& name, Type type);
  void define(const std::string& name, Type type, const std::string& help, std::vector<double> bounds);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace clm
