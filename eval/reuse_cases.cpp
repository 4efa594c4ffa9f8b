#include "reuse_cases.h"

#include <set>

#include <nlohmann/json.hpp>

#include "case_file.h"

namespace clm {

namespace {

using nlohmann::json;

Result<std::string> optional_string(const json& obj, const char* field, const std::string& where) {
  const auto it = obj.find(field);
  if (it == obj.end()) return std::string();
  if (!it->is_string()) return fail(where + ": '" + field + "' must be a string");
  return it->get<std::string>();
}

Result<ReuseCase> parse_case(const json& c, std::size_t index) {
  std::string where = "case " + std::to_string(index);
  if (!c.is_object()) return fail(where + ": must be an object");
  const auto id = c.find("id");
  if (id == c.end()) return fail(where + ": missing 'id'");
  if (!id->is_string() || id->get<std::string>().empty()) return fail(where + ": 'id' must be a non-empty string");
  ReuseCase out;
  out.id = id->get<std::string>();
  where += " (" + out.id + ")";

  const auto warm = c.find("warm");
  if (warm == c.end()) return fail(where + ": missing 'warm' (the prompts that fill the cache; may be [])");
  if (!warm->is_array()) return fail(where + ": 'warm' must be an array of strings");
  for (std::size_t k = 0; k < warm->size(); ++k) {
    const json& w = (*warm)[k];
    if (!w.is_string()) return fail(where + ": 'warm'[" + std::to_string(k) + "] must be a string");
    out.warm.push_back(w.get<std::string>());
  }

  if (const auto bos = c.find("warm_bos"); bos != c.end()) {
    if (!bos->is_boolean()) return fail(where + ": 'warm_bos' must be true or false");
    out.warm_bos = bos->get<bool>();
  }
  const auto ask = c.find("ask");
  if (ask == c.end()) return fail(where + ": missing 'ask'");
  if (!ask->is_string()) return fail(where + ": 'ask' must be a string");
  out.ask = ask->get<std::string>();
  if (out.ask.empty()) return fail(where + ": 'ask' must not be empty");

  if (const auto ref = c.find("reference"); ref != c.end()) {
    if (!ref->is_string()) return fail(where + ": 'reference' must be a string");
    if (ref->get<std::string>().empty()) return fail(where + ": 'reference' must not be empty (omit it instead)");
    out.reference = ref->get<std::string>();
  }
  auto note = optional_string(c, "note", where);
  if (!note) return std::unexpected(note.error());
  out.note = *note;
  return out;
}

}  // namespace

Result<ReuseCaseSet> parse_reuse_cases(std::string_view json_text) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::parse_error& e) {
    return fail(std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) return fail("the top level must be an object with a 'cases' array");
  ReuseCaseSet set;
  auto name = optional_string(doc, "name", "the case set");
  if (!name) return std::unexpected(name.error());
  set.name = *name;
  auto description = optional_string(doc, "description", "the case set");
  if (!description) return std::unexpected(description.error());
  set.description = *description;

  const auto cases = doc.find("cases");
  if (cases == doc.end()) return fail("missing 'cases'");
  if (!cases->is_array()) return fail("'cases' must be an array");
  if (cases->empty()) return fail("'cases' is empty");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases->size(); ++i) {
    auto c = parse_case((*cases)[i], i);
    if (!c) return std::unexpected(c.error());
    if (!ids.insert(c->id).second) return fail("case " + std::to_string(i) + ": duplicate id '" + c->id + "'");
    set.cases.push_back(std::move(*c));
  }
  return set;
}

Result<ReuseCaseSet> load_reuse_cases(const std::string& path) {
  return load_case_file<ReuseCaseSet>(path, [](const std::string& text) { return parse_reuse_cases(text); });
}

}  // namespace clm
