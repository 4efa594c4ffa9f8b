#include "evict_cases.h"

#include <set>

#include <nlohmann/json.hpp>

#include "case_file.h"

namespace clm {

namespace {

using nlohmann::json;

Result<std::string> string_field(const json& obj, const char* field, const std::string& where, bool required) {
  const auto it = obj.find(field);
  if (it == obj.end()) {
    if (required) return fail(where + ": missing '" + field + "'");
    return std::string();
  }
  if (!it->is_string()) return fail(where + ": '" + field + "' must be a string");
  if (required && it->get<std::string>().empty()) return fail(where + ": '" + field + "' must not be empty");
  return it->get<std::string>();
}

}  // namespace

Result<EvictCaseSet> parse_evict_cases(std::string_view json_text) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return fail(std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) return fail("the top level must be an object with a 'cases' array");
  EvictCaseSet set;
  auto name = string_field(doc, "name", "the case set", false);
  if (!name) return std::unexpected(name.error());
  set.name = *name;
  auto description = string_field(doc, "description", "the case set", false);
  if (!description) return std::unexpected(description.error());
  set.description = *description;
  const auto cases = doc.find("cases");
  if (cases == doc.end()) return fail("missing 'cases'");
  if (!cases->is_array()) return fail("'cases' must be an array");
  if (cases->empty()) return fail("'cases' is empty");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases->size(); ++i) {
    const json& c = (*cases)[i];
    std::string where = "case " + std::to_string(i);
    if (!c.is_object()) return fail(where + ": must be an object");
    EvictCase out;
    auto id = string_field(c, "id", where, true);
    if (!id) return std::unexpected(id.error());
    out.id = *id;
    where += " (" + out.id + ")";
    auto text = string_field(c, "text", where, true);
    if (!text) return std::unexpected(text.error());
    out.text = *text;
    auto note = string_field(c, "note", where, false);
    if (!note) return std::unexpected(note.error());
    out.note = *note;
    if (!ids.insert(out.id).second) return fail(where + ": duplicate id");
    set.cases.push_back(std::move(out));
  }
  return set;
}

Result<EvictCaseSet> load_evict_cases(const std::string& path) {
  return load_case_file<EvictCaseSet>(path, [](const std::string& text) { return parse_evict_cases(text); });
}

}  // namespace clm
