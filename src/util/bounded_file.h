// Reading a whole file named by a user (a prompt, a template, a cases file,
// a tokenizer) with a bound on its size that is checked before a byte is
// allocated: a character device such as /dev/zero, a FIFO, a directory or a
// multi-gigabyte sparse file is refused with a message, never read until
// memory runs out.
#pragma once

#include <cstddef>
#include <string>

#include "util/error.h"

namespace clm {

// The bytes of the regular file at `path`, at most `max_bytes` of them.
// `what` names the file in messages ("prompt file", "--chat-template-file").
// A file that grows past the bound while it is read is refused too.
Result<std::string> read_bounded_file(const std::string& path, std::size_t max_bytes, const std::string& what);

// Standard input, at most `max_bytes` of it.
Result<std::string> read_bounded_stdin(std::size_t max_bytes, const std::string& what);

inline constexpr std::size_t kMiB = std::size_t{1} << 20;

}  // namespace clm
