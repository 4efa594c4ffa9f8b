#include "app/metrics_registry.h"

#include <algorithm>
#include <cmath>
#include <charconv>

#include "util/check.h"

namespace clm {

namespace {

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_number(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "+Inf" : "-Inf";
  // Shortest text that reads back as the same double: 0.1, not 0.10000000000000001.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

std::string label_block(const MetricLabels& labels, const std::string& le = {}) {
  if (labels.empty() && le.empty()) return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    out += k + "=\"" + escape_label_value(v) + "\"";
    first = false;
  }
  if (!le.empty()) out += std::string(first ? "" : ",") + "le=\"" + le + "\"";
  return out + "}";
}

}  // namespace

void MetricsRegistry::define(const std::string& name, Type type, const std::string& help, std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  CLM_CHECK(!families_.contains(name), "metric defined twice");
  CLM_CHECK(std::is_sorted(bounds.begin(), bounds.end()), "histogram bounds must ascend");
  Family& f = families_[name];
  f.type = type;
  f.help = help;
  f.bounds = std::move(bounds);
}

void MetricsRegistry::define_counter(const std::string& name, const std::string& help) {
  define(name, Type::Counter, help, {});
}
void MetricsRegistry::define_gauge(const std::string& name, const std::string& help) {
  define(name, Type::Gauge, help, {});
}
void MetricsRegistry::define_histogram(const std::string& name, const std::string& help, std::vector<double> bounds) {
  define(name, Type::Histogram, help, std::move(bounds));
}

MetricsRegistry::Family& MetricsRegistry::family(const std::string& name, Type type) {
  auto it = families_.find(name);
  CLM_CHECK(it != families_.end() && it->second.type == type, "metric used before it was defined, or as another type");
  return it->second;
}

void MetricsRegistry::add(const std::string& name, const MetricLabels& labels, double delta) {
  std::lock_guard lock(mu_);
  family(name, Type::Counter).series[labels].value += delta;
}

void MetricsRegistry::set_counter(const std::string& name, const MetricLabels& labels, double total) {
  std::lock_guard lock(mu_);
  double& value = family(name, Type::Counter).series[labels].value;
  value = std::max(value, total);
}

void MetricsRegistry::set(const std::string& name, const MetricLabels& labels, double value) {
  std::lock_guard lock(mu_);
  family(name, Type::Gauge).series[labels].value = value;
}

void MetricsRegistry::observe(const std::string& name, const MetricLabels& labels, double value) {
  std::lock_guard lock(mu_);
  Family& f = family(name, Type::Histogram);
  Series& s = f.series[labels];
  if (s.bucket_counts.empty()) s.bucket_counts.assign(f.bounds.size() + 1, 0);
  const auto bucket = std::lower_bound(f.bounds.begin(), f.bounds.end(), value) - f.bounds.begin();
  ++s.bucket_counts[static_cast<std::size_t>(bucket)];
  s.sum += value;
  ++s.count;
}

double MetricsRegistry::value(const std::string& name, const MetricLabels& labels) const {
  std::lock_guard lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return 0.0;
  auto s = it->second.series.find(labels);
  return s == it->second.series.end() ? 0.0 : s->second.value;
}

std::string MetricsRegistry::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    static const char* kTypeNames[] = {"counter", "gauge", "histogram"};
    out += "# HELP " + name + " " + escape_help(f.help) + "\n";
    out += "# TYPE " + name + " " + kTypeNames[static_cast<int>(f.type)] + "\n";
    for (const auto& [labels, s] : f.series) {
      if (f.type != Type::Histogram) {
        out += name + label_block(labels) + " " + format_number(s.value) + "\n";
        continue;
      }
      uint64_t cumulative = 0;
      for (std::size_t b = 0; b <= f.bounds.size(); ++b) {
        cumulative += s.bucket_counts[b];
        const std::string le = b < f.bounds.size() ? format_number(f.bounds[b]) : "+Inf";
        out += name + "_bucket" + label_block(labels, le) + " " + std::to_string(cumulative) + "\n";
      }
      out += name + "_sum" + label_block(labels) + " " + format_number(s.sum) + "\n";
      out += name + "_count" + label_block(labels) + " " + std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace clm
