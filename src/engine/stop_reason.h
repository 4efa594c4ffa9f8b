// How a request ended, as its summary reports it: with the model's end
// token, at a length limit, cancelled, or failed. An enum so that code acts
// on the reason without comparing words; its name is what the CLI prints.
#pragma once

#include <cstdint>
#include <string_view>

namespace clm {

enum class StopReason : uint8_t {
  Stop,       // the end token
  Length,     // max_tokens, the context, or a preemption (the summary's note says which)
  Cancelled,  // the summary's cancel_cause says by whom
  Error,      // the summary's error says what
};

// "stop", "length", "cancelled", "error": `clmcache run --json`'s stop_reason.
std::string_view to_string(StopReason reason);

// A reason equals its name, so that tests and logs may spell it as the CLI
// prints it.
inline bool operator==(StopReason reason, std::string_view name) { return to_string(reason) == name; }

}  // namespace clm
