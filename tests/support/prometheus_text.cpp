#include "support/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace clm::test {

namespace {

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool parse_value(const std::string& s, double& out) {
  if (s == "+Inf") { out = INFINITY; return true; }
  if (s == "-Inf") { out = -INFINITY; return true; }
  if (s == "NaN") { out = NAN; return true; }
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// The family a sample belongs to, given the declared types.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
  if (types.contains(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string sfx = suffix;
    if (name.size() > sfx.size() && name.ends_with(sfx)) {
      const std::string base = name.substr(0, name.size() - sfx.size());
      auto it = types.find(base);
      if (it != types.end() && (it->second == "histogram" || it->second == "summary")) return base;
    }
  }
  return {};
}

bool parse_sample(const std::string& line, PromSample& s, std::string& error) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  s.name = line.substr(0, i);
  if (!valid_name(s.name)) { error = "bad metric name in: " + line; return false; }
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      std::size_t eq = line.find('=', i);
      if (eq == std::string::npos) { error = "bad label in: " + line; return false; }
      const std::string key = line.substr(i, eq - i);
      if (!valid_name(key) || eq + 1 >= line.size() || line[eq + 1] != '"') { error = "bad label in: " + line; return false; }
      std::string value;
      std::size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\') {
          if (++j >= line.size()) { error = "bad escape in: " + line; return false; }
          if (line[j] == 'n') value += '\n';
          else if (line[j] == '\\' || line[j] == '"') value += line[j];
          else { error = "bad escape in: " + line; return false; }
        } else {
          value += line[j];
        }
      }
      if (j >= line.size()) { error = "unterminated label value in: " + line; return false; }
      if (s.labels.contains(key)) { error = "repeated label in: " + line; return false; }
      s.labels[key] = value;
      i = j + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) { error = "unterminated labels in: " + line; return false; }
    ++i;
  }
  if (i >= line.size() || line[i] != ' ') { error = "no value in: " + line; return false; }
  std::string rest = line.substr(i + 1);
  // An optional timestamp follows the value.
  const std::size_t sp = rest.find(' ');
  if (sp != std::string::npos) rest = rest.substr(0, sp);
  if (!parse_value(rest, s.value)) { error = "bad value in: " + line; return false; }
  return true;
}

bool check_histograms(const PromText& t, std::string& error) {
  for (const auto& [family, type] : t.types) {
    if (type != "histogram") continue;
    // Group bucket series by their labels without "le".
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
    std::map<std::map<std::string, std::string>, double> counts;
    for (const auto& s : t.samples) {
      if (s.name == family + "_bucket") {
        auto labels = s.labels;
        auto le = labels.find("le");
        double bound = 0;
        if (le == labels.end() || !parse_value(le->second, bound)) { error = family + ": bucket without le"; return false; }
        labels.erase(le);
        buckets[labels].push_back({bound, s.value});
      } else if (s.name == family + "_count") {
        counts[s.labels] = s.value;
      }
    }
    for (const auto& [labels, list] : buckets) {
      for (std::size_t k = 1; k < list.size(); ++k) {
        if (!(list[k].first > list[k - 1].first) || list[k].second < list[k - 1].second) {
          error = family + ": buckets not ascending and cumulative";
          return false;
        }
      }
      if (list.empty() || !std::isinf(list.back().first)) { error = family + ": no +Inf bucket"; return false; }
      auto c = counts.find(labels);
      if (c == counts.end() || c->second != list.back().second) { error = family + ": +Inf bucket != _count"; return false; }
    }
  }
  return true;
}

}  // namespace

double PromText::sum(const std::string& name, const std::map<std::string, std::string>& labels) const {
  double total = 0;
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) total += s.value;
  }
  return total;
}

bool PromText::has(const std::string& name) const {
  for (const auto& s : samples)
    if (s.name == name) return true;
  return false;
}

PromText parse_prometheus_text(const std::string& text, std::string& error) {
  PromText t;
  error.clear();
  if (!text.empty() && text.back() != '\n') { error = "text does not end with a newline"; return t; }
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const std::string rest = line.substr(7);
      const std::size_t sp = rest.find(' ');
      const std::string name = rest.substr(0, sp);
      const std::string arg = sp == std::string::npos ? "" : rest.substr(sp + 1);
      if (!valid_name(name)) { error = "bad name in: " + line; return t; }
      if (line[2] == 'H') {
        t.help[name] = arg;
      } else {
        if (arg != "counter" && arg != "gauge" && arg != "histogram" && arg != "summary" && arg != "untyped") {
          error = "bad type in: " + line;
          return t;
        }
        if (t.types.contains(name)) { error = "type declared twice: " + name; return t; }
        t.types[name] = arg;
      }
      continue;
    }
    if (line[0] == '#') continue;  // a comment
    PromSample s;
    if (!parse_sample(line, s, error)) return t;
    if (family_of(s.name, t.types).empty()) { error = "sample before its TYPE line: " + line; return t; }
    t.samples.push_back(std::move(s));
  }
  check_histograms(t, error);
  return t;
}

}  // namespace clm::test
