// Replies from a Redis server (a network peer: untrusted) on arbitrary
// bytes, read as the Redis tier reads them (tier/redis_tier.cpp): hiredis's
// reader fed the bytes as they arrive, with the tier's bound on what may be
// buffered before a reply is whole, and each string reply then checked as a
// stored entry (stored_entry_checks.h). The first input byte picks the
// size of each read, so that replies split at every point are tried.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "stored_entry_checks.h"
#include "tier/entry_codec.h"

namespace {

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};
struct ReplyDeleter {
  void operator()(void* r) const { freeReplyObject(r); }
};

void check_reply(const redisReply& r) {
  if (r.type == REDIS_REPLY_STRING)
    clm::fuzz::check_stored_entry(std::as_bytes(std::span<const char>(r.str, r.len)));
  if (r.type == REDIS_REPLY_ARRAY)
    for (std::size_t i = 0; i < r.elements; ++i) check_reply(*r.element[i]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t chunk = std::size_t{1} + data[0];
  std::span<const std::uint8_t> rest(data + 1, size - 1);
  const std::size_t max_reply_bytes = clm::max_entry_bytes(clm::test::small_tier_geometry());
  const std::unique_ptr<redisReader, ReaderDeleter> reader(redisReaderCreate());
  while (!rest.empty()) {
    const std::size_t n = std::min(chunk, rest.size());
    if (redisReaderFeed(reader.get(), reinterpret_cast<const char*>(rest.data()), n) != REDIS_OK) return 0;
    rest = rest.subspan(n);
    for (;;) {
      void* r = nullptr;
      if (redisReaderGetReply(reader.get(), &r) != REDIS_OK) return 0;  // a protocol error ends the connection
      if (!r) break;
      const std::unique_ptr<void, ReplyDeleter> owned(r);
      check_reply(*static_cast<const redisReply*>(r));
    }
    if (reader->len - reader->pos > max_reply_bytes) return 0;  // the tier gives up on such a reply
  }
  return 0;
}
