// Looking into parsed JSON without exceptions: nlohmann's operator[] and
// at() throw on a missing key or a wrong type, which must never escape a
// reader of untrusted files.
#pragma once

#include <nlohmann/json.hpp>

namespace clm {

// obj[key], or nullptr when obj is not an object, or the key is absent or null.
inline const nlohmann::json* json_member(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace clm
