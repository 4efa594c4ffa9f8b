// A stored K/V entry on arbitrary bytes: the safetensors file of the disk
// tier and the blob of an SQLite row hold exactly these bytes. Decoded with
// the checks every tier applies (stored_entry_checks.h).
#include <cstddef>
#include <cstdint>
#include <span>

#include "stored_entry_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
  clm::fuzz::check_stored_entry(bytes);
  return 0;
}
