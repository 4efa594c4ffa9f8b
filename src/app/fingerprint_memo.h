// Remembers model fingerprints between runs, so that a large model's weights
// are hashed once per file, not at every start. Entries live in the user's
// cache directory, keyed by the file's absolute path and checked against its
// size and modification time; anything unreadable or stale is a miss.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace clm {

std::optional<uint64_t> recall_fingerprint(const std::string& model_path);
// Best effort: a failure to write only means hashing again next time.
void remember_fingerprint(const std::string& model_path, uint64_t fingerprint);
// The memo file: $XDG_CACHE_HOME/clmcache/fingerprints.json (or under ~/.cache).
std::string fingerprint_memo_path();

}  // namespace clm
