// SessionRecord: what a conversation leaves behind between its turns, as the
// server remembers it and as the session archive keeps it across restarts:
// the exact token ids of its last turn, the text they decode to, and when the
// turn ended (wall clock, so that a restarted process can tell its age).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clm {

struct SessionRecord {
  std::string id;  // client-chosen: request data, never part of a path
  std::string text;
  std::vector<int32_t> tokens;
  int64_t last_used_unix_ms = 0;
};

}  // namespace clm
