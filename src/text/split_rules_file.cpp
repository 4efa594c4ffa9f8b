#include "text/split_rules_file.h"


#include <nlohmann/json.hpp>

#include "text/default_split_rules.h"
#include "util/bounded_file.h"

namespace clm {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxLength = 1 << 20;  // tokens; anything longer is surely a mistake

std::string type_names() {
  std::string names;
  for (BlockType t : all_block_types()) {
    if (!names.empty()) names += ", ";
    names += to_string(t);
  }
  return names;
}

// A length in tokens: a non-negative integer no larger than kMaxLength.
Result<std::size_t> read_length(const json& value, const std::string& what) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
      value.get<int64_t>() > static_cast<int64_t>(kMaxLength))
    return fail(what + " must be an integer from 0 to " + std::to_string(kMaxLength) + ", not " + value.dump());
  return static_cast<std::size_t>(value.get<int64_t>());
}

Status add_file_rule(SemanticSplitter& splitter, const json& rule, std::size_t index) {
  const std::string where = "rule " + std::to_string(index);
  if (!rule.is_object()) return fail(where + ": expected an object, not " + rule.dump());
  for (const auto& [key, value] : rule.items()) {
    if (key != "pattern" && key != "type" && key != "min_length")
      return fail(where + ": unknown key \"" + key + "\" (expected pattern, type, min_length)");
  }
  if (!rule.contains("pattern") || !rule["pattern"].is_string())
    return fail(where + ": \"pattern\" must be a string");
  if (!rule.contains("type") || !rule["type"].is_string()) return fail(where + ": \"type\" must be a string");
  const std::string type_name = rule["type"].get<std::string>();
  const auto type = parse_block_type(type_name);
  if (!type) return fail(where + ": unknown type \"" + type_name + "\" (expected one of " + type_names() + ")");
  std::size_t min_length = 0;
  if (rule.contains("min_length")) {
    auto length = read_length(rule["min_length"], where + ": \"min_length\"");
    if (!length) return std::unexpected(length.error());
    min_length = *length;
  }
  if (auto added = splitter.add_rule(rule["pattern"].get<std::string>(), *type, min_length); !added)
    return fail(where + ": " + added.error().message);
  return {};
}

}  // namespace

Result<SemanticSplitter> parse_split_rules(std::string_view json_text, SplitterOptions base) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {  // a number too large for a double is out_of_range, not parse_error
    return fail(std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) return fail("expected a JSON object with a \"rules\" array");
  for (const auto& [key, value] : doc.items()) {
    if (key != "rules" && key != "min_block_length" && key != "default_rules")
      return fail("unknown key \"" + key + "\" (expected rules, min_block_length, default_rules)");
  }
  if (!doc.contains("rules") || !doc["rules"].is_array()) return fail("\"rules\" must be an array of rules");
  bool defaults = false;
  if (doc.contains("default_rules")) {
    if (!doc["default_rules"].is_boolean()) return fail("\"default_rules\" must be true or false");
    defaults = doc["default_rules"].get<bool>();
  }
  SplitterOptions options = base;
  if (doc.contains("min_block_length")) {
    auto length = read_length(doc["min_block_length"], "\"min_block_length\"");
    if (!length) return std::unexpected(length.error());
    options.min_block_length = *length;
  }

  SemanticSplitter splitter(options);
  const json& rules = doc["rules"];
  for (std::size_t i = 0; i < rules.size(); ++i) {
    if (auto added = add_file_rule(splitter, rules[i], i); !added) return std::unexpected(added.error());
  }
  if (defaults) {
    for (const DefaultSplitRule& rule : default_split_rules()) {
      if (auto added = splitter.add_rule(rule.pattern, rule.type, rule.min_length); !added)
        return fail("default rule " + std::string(rule.name) + ": " + added.error().message);
    }
  }
  return splitter;
}

Result<SemanticSplitter> load_split_rules(const std::string& path, SplitterOptions base) {
  auto text = read_bounded_file(path, kMaxRuleFileBytes, "split rules file");
  if (!text) return std::unexpected(text.error());
  auto splitter = parse_split_rules(*text, base);
  if (!splitter) return fail("split rules " + path + ": " + splitter.error().message);
  return splitter;
}

}  // namespace clm
