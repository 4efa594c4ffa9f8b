// The error a template raises while it is lexed, parsed or rendered. It is
// thrown inside the interpreter only; Template turns it into a Result whose
// message names the line and column it happened at.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace clm::jinja {

class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, std::optional<uint32_t> offset = std::nullopt)
      : std::runtime_error(message), offset_(offset) {}

  // Byte offset in the template source, when known.
  std::optional<uint32_t> offset() const { return offset_; }
  void set_offset_if_unknown(uint32_t offset) {
    if (!offset_) offset_ = offset;
  }

 private:
  std::optional<uint32_t> offset_;
};

}  // namespace clm::jinja
