// Errors are values: every fallible call across a module boundary returns
// Result<T>, an std::expected whose error carries a human-readable message.
// Exceptions never cross module boundaries.
#pragma once

#include <expected>
#include <string>
#include <utility>

namespace clm {

struct Error {
  std::string message;
};

template <class T>
using Result = std::expected<T, Error>;

// Status for calls that return nothing on success.
using Status = std::expected<void, Error>;

inline std::unexpected<Error> fail(std::string message) {
  return std::unexpected<Error>(Error{std::move(message)});
}

}  // namespace clm
