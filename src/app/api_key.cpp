#include "app/api_key.h"

namespace clm {

bool api_key_accepted(std::string_view key, std::string_view header) {
  if (key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  if (!header.starts_with(kBearer)) return false;
  const std::string_view given = header.substr(kBearer.size());
  // Compare every byte of the configured key whatever the input, so timing
  // does not reveal the length of a matching prefix.
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char g = i < given.size() ? given[i] : '\0';
    diff |= static_cast<unsigned>(static_cast<unsigned char>(g) ^ static_cast<unsigned char>(key[i]));
  }
  return diff == 0;
}

}  // namespace clm
