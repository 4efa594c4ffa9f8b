// Errors are values: every fallible call across a module boundary returns
// Result<T>, an std::expected whose error carries a human-readable message
// and a kind. Exceptions never cross module boundaries.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace clm {

// What went wrong, for callers that act on it (the server maps each kind to
// an HTTP status) without reading the message. These are the kinds the core
// can report; an edge above it (the HTTP server) names the refusals only it
// makes with values from kFirstEdgeErrorKind up, so that they travel in the
// same Error without the core knowing them.
enum class ErrorKind {
  Internal,             // a failure of ours (the default)
  InvalidRequest,       // the caller asked for something malformed or out of range
  ContextExceeded,      // the prompt does not fit the context
  TooLarge,             // the input is larger than a limit (a body, the whole KV cache)
  NotFound,             // what was named does not exist
  Unauthorized,         // missing or wrong credentials
  Forbidden,            // refused by policy (an Origin or Host that is not allowed)
  Unsupported,          // meaningful, but not implemented here
  Overloaded,           // no room now (a full queue); retrying later may work
  Unavailable,          // shutting down or stopped
};
inline constexpr int kFirstEdgeErrorKind = 64;  // past the core's kinds, with room for more

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::Internal;
};

template <class T>
using Result = std::expected<T, Error>;

// Status for calls that return nothing on success.
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(std::string message) {
  return std::unexpected<Error>(Error{std::move(message)});
}

inline std::unexpected<Error> fail(ErrorKind kind, std::string message) {
  return std::unexpected<Error>(Error{std::move(message), kind});
}

}  // namespace clm
