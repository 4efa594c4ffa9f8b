#include "tier/redis_tier.h"

#include <hiredis/hiredis.h>

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <cstdio>
#include <vector>

#include "tier/entry_codec.h"
#include "util/hex.h"
#include "util/sha256.h"

namespace clm {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// One operation's bounds: when it must be done by, and how many reply bytes
// it may buffer.
struct RedisOpBounds {
  Clock::time_point deadline;
  std::size_t max_reply_bytes = 0;
};

namespace {

timeval to_timeval(double seconds) {
  timeval tv{};
  const double whole = std::floor(seconds);
  tv.tv_sec = static_cast<time_t>(whole);
  tv.tv_usec = static_cast<suseconds_t>((seconds - whole) * 1e6);
  return tv;
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Queues a command; it is sent by the next read_reply.
bool append(redisContext* ctx, std::initializer_list<std::string_view> args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data()) == REDIS_OK;
}

// Sends what is queued, then reads the next reply; null on an I/O error,
// once the operation's deadline has passed (a peer that trickles its bytes
// included: the socket timeout alone bounds each read, not the reply), or
// when more than the bound is buffered before the reply is whole. hiredis
// keeps an incomplete reply as raw bytes, so the bound holds to within one
// read (16 KiB) before anything is allocated for it.
Reply read_reply(redisContext* ctx, const RedisOpBounds& bounds) {
  for (int done = 0; !done;) {
    if (Clock::now() >= bounds.deadline || redisBufferWrite(ctx, &done) != REDIS_OK) return nullptr;
  }
  for (;;) {
    void* r = nullptr;
    if (redisReaderGetReply(ctx->reader, &r) != REDIS_OK) return nullptr;
    if (r) return Reply(static_cast<redisReply*>(r));
    if (ctx->reader->len - ctx->reader->pos > bounds.max_reply_bytes) return nullptr;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(bounds.deadline - Clock::now()).count();
    if (left <= 0) return nullptr;
    pollfd p{ctx->fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return nullptr;
    if (redisBufferRead(ctx) != REDIS_OK) return nullptr;
  }
}

Reply command(redisContext* ctx, const RedisOpBounds& bounds, std::initializer_list<std::string_view> args) {
  if (!append(ctx, args)) return nullptr;
  return read_reply(ctx, bounds);
}

bool is_error(const Reply& r) { return !r || r->type == REDIS_REPLY_ERROR; }

// The peer closed a connection that had been idle (Redis restarted, or
// dropped an idle client): the next connection may well work.
bool closed_by_peer(const redisContext* ctx) {
  return ctx->err == REDIS_ERR_EOF || (ctx->err == REDIS_ERR_IO && (errno == ECONNRESET || errno == EPIPE));
}

}  // namespace

Result<std::unique_ptr<RedisTier>> RedisTier::open(const RedisTierOptions& options, uint64_t model_fingerprint,
                                                   const KvGeometry& geometry) {
  if (options.address.host.empty()) return fail("Redis tier: no host");
  if (options.ttl_s < 1) return fail("Redis TTL must be at least 1 second");
  if (!(options.connect_timeout_s > 0.0) || !(options.command_timeout_s > 0.0))
    return fail("Redis timeouts must be positive");
  return std::unique_ptr<RedisTier>(new RedisTier(options, model_fingerprint, geometry));
}

RedisTier::RedisTier(const RedisTierOptions& options, uint64_t model_fingerprint, const KvGeometry& geometry)
    : options_(options),
      fingerprint_(model_fingerprint),
      geometry_(geometry),
      breaker_(options.breaker_cooldown_s, options.clock) {
  // Another KV type or block size gives other bytes under the same block
  // key: the layout is part of the namespace, so such servers never fight.
  key_base_ = options_.key_prefix + ":" + hex64(fingerprint_) + ":" +
              kv_types_text(geometry_.types) + "x" + std::to_string(geometry_.block_size) + ":" +
              (options_.secret.empty() ? "" : "mac:");
}

RedisTier::~RedisTier() {
  drop(lookup_);
  drop(store_);
}

std::string RedisTier::key_name(BlockKey key) const { return key_base_ + hex64(key); }

Sha256Digest RedisTier::mac_of(std::string_view name, std::span<const char> value) const {
  auto as_bytes = [](auto s) { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
  // The key's length first, so that no split of key and value reads as another.
  const std::string length = std::to_string(name.size()) + ":";
  return hmac_sha256(as_bytes(std::string_view(options_.secret)),
                     {as_bytes(std::string_view(length)), as_bytes(name), as_bytes(value)});
}

bool RedisTier::mac_verifies(std::string_view name, std::span<const char> value, std::span<const char> mac) const {
  Sha256Digest given{};
  std::memcpy(given.data(), mac.data(), given.size());
  return same_digest(mac_of(name, value), given);
}

void RedisTier::drop(Link& link) {
  if (link.ctx) redisFree(link.ctx);
  link.ctx = nullptr;
}

bool RedisTier::connect(Link& link) {
  const auto& a = options_.address;
  link.ctx = redisConnectWithTimeout(a.host.c_str(), a.port, to_timeval(options_.connect_timeout_s));
  if (!link.ctx || link.ctx->err) {
    drop(link);
    return false;
  }
  link.epoch = breaker_.trips();
  // The socket timeout bounds each blocking write; read_reply bounds the rest.
  if (redisSetTimeout(link.ctx, to_timeval(options_.command_timeout_s)) != REDIS_OK) {
    drop(link);
    return false;
  }
  if (a.db != 0) {
    const std::string db = std::to_string(a.db);
    if (is_error(command(link.ctx, bounds(), {"SELECT", db}))) {
      drop(link);
      return false;
    }
  }
  return true;
}

RedisOpBounds RedisTier::bounds() const {
  // A reply is at most one stored entry and its framing.
  constexpr std::size_t kFraming = 64;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options_.command_timeout_s));
  return {Clock::now() + timeout, max_entry_bytes(geometry_) + kMacBytes + kFraming};
}

bool RedisTier::call(Link& link, const std::function<bool(redisContext*, const RedisOpBounds&)>& body) {
  std::lock_guard lock(link.mu);
  // Asked under the link's lock: a caller that waited behind a call that
  // timed out sees the breaker it opened and does not time out again.
  if (!breaker_.allow()) return false;
  // A connection older than the last trip may lead to a server that died
  // or restarted since (the breaker kept it idle): start afresh.
  if (link.ctx && link.epoch != breaker_.trips()) drop(link);
  const bool reused = link.ctx != nullptr;
  if (!link.ctx && !connect(link)) {
    breaker_.record_failure();
    return false;
  }
  bool ok = body(link.ctx, bounds());
  if (!ok && reused && closed_by_peer(link.ctx)) {
    // An idle connection the peer had closed (a Redis restart) is not
    // Redis failing: one fresh connection gets one more try.
    drop(link);
    ok = connect(link) && body(link.ctx, bounds());
  }
  if (!ok) {
    drop(link);
    breaker_.record_failure();
    return false;
  }
  breaker_.record_success();
  return true;
}

std::size_t RedisTier::exists(std::span<const BlockKey> chain) {
  if (chain.empty()) return 0;
  std::size_t present = 0;
  call(lookup_, [&](redisContext* ctx, const RedisOpBounds& b) {
    // One round trip: every EXISTS is sent before the first reply is read.
    for (BlockKey key : chain) {
      if (!append(ctx, {"EXISTS", key_name(key)})) return false;
    }
    bool leading = true;
    std::size_t n = 0;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const Reply r = read_reply(ctx, b);
      if (is_error(r) || r->type != REDIS_REPLY_INTEGER) return false;
      leading = leading && r->integer == 1;
      if (leading) ++n;
    }
    present = n;
    return true;
  });
  return present;
}

std::optional<TierEntry> RedisTier::get_into(BlockKey key, std::span<std::byte> kv) {
  const std::string name = key_name(key);
  std::optional<TierEntry> out;
  bool damaged = false;
  const std::string ttl = std::to_string(options_.ttl_s);
  call(lookup_, [&](redisContext* ctx, const RedisOpBounds& b) {
    damaged = false;
    // A hit renews the entry's time to live, so that what is read stays and
    // what nobody reads expires: GET and EXPIRE in one round trip (GETEX
    // would need Redis 6.2).
    if (!append(ctx, {"GET", name}) || !append(ctx, {"EXPIRE", name, ttl})) return false;
    const Reply r = read_reply(ctx, b);
    if (!r) return false;
    const Reply renewed = read_reply(ctx, b);
    if (is_error(r) || is_error(renewed)) return false;
    if (r->type == REDIS_REPLY_NIL) return true;
    if (r->type != REDIS_REPLY_STRING) return false;
    std::span<const char> value(r->str, r->len);
    // With a secret, the MAC is checked before anything in the value is believed.
    const bool signed_values = !options_.secret.empty();
    const bool authentic = !signed_values || (value.size() >= kMacBytes &&
                                              mac_verifies(name, value.first(value.size() - kMacBytes),
                                                           value.last(kMacBytes)));
    if (!authentic) {
      ++unauthenticated_;
    } else {
      if (signed_values) value = value.first(value.size() - kMacBytes);
      // The reply's K/V is copied once, into its destination.
      const EntryReader read = memory_reader(std::as_bytes(value));
      Result<EntryHeader> header = read_entry_header(value.size(), read);
      if (header && header_defect(header->entry, fingerprint_, key, geometry_) == nullptr &&
          read_entry_kv(*header, read, kv)) {
        out = std::move(header->entry);
        return true;
      }
    }
    // Damaged or foreign under our key: a miss, and gone, so that the next
    // writer can replace it.
    damaged = true;
    return !is_error(command(ctx, b, {"DEL", name}));
  });
  if (damaged) {
    ++damaged_;
    if (removal_listener_) removal_listener_(std::span<const BlockKey>(&key, 1));
  }
  return out;
}

bool RedisTier::put(const TierEntry& entry) {
  const std::string name = key_name(entry.key);
  std::vector<std::byte> bytes = encode_entry(entry);
  if (!options_.secret.empty()) {
    const Sha256Digest mac = mac_of(name, std::span<const char>(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    for (uint8_t b : mac) bytes.push_back(static_cast<std::byte>(b));
  }
  const std::string_view value(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string ttl = std::to_string(options_.ttl_s);
  return call(store_, [&](redisContext* ctx, const RedisOpBounds& b) {
    return !is_error(command(ctx, b, {"SET", name, value, "EX", ttl}));
  });
}

void RedisTier::remove(BlockKey key) {
  const std::string name = key_name(key);
  const bool deleted =
      call(store_, [&](redisContext* ctx, const RedisOpBounds& b) { return !is_error(command(ctx, b, {"DEL", name})); });
  if (deleted && removal_listener_) removal_listener_(std::span<const BlockKey>(&key, 1));
}

}  // namespace clm
