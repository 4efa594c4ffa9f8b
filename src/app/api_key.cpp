#include "app/api_key.h"

#include "util/bounded_file.h"

namespace clm {

namespace {

// Compares every byte of the configured key whatever the input, so timing
// does not reveal the length of a matching prefix.
bool same_key(std::string_view given, std::string_view key) {
  unsigned diff = given.size() == key.size() ? 0u : 1u;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char g = i < given.size() ? given[i] : '\0';
    diff |= static_cast<unsigned>(static_cast<unsigned char>(g) ^ static_cast<unsigned char>(key[i]));
  }
  return diff == 0;
}

}  // namespace

std::string_view bearer_token(std::string_view header) {
  constexpr std::string_view kBearer = "Bearer ";
  if (!header.starts_with(kBearer)) return {};
  return header.substr(kBearer.size());
}

bool api_key_accepted(std::span<const std::string> keys, std::string_view header) {
  if (keys.empty()) return true;
  if (!header.starts_with("Bearer ")) return false;
  const std::string_view given = bearer_token(header);
  // Every key is compared, so which one matched does not show in the time.
  bool accepted = false;
  for (const std::string& key : keys) accepted |= same_key(given, key);
  return accepted;
}

Result<std::vector<std::string>> read_api_key_file(const std::string& path) {
  auto text = read_bounded_file(path, kMiB, "--api-key-file");
  if (!text) return std::unexpected(text.error());
  std::vector<std::string> keys;
  std::string_view rest = *text;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    const std::size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    keys.emplace_back(line);
  }
  if (keys.empty()) return fail("--api-key-file " + path + " holds no key");
  return keys;
}

}  // namespace clm
