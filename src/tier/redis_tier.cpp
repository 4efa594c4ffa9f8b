#include "tier/redis_tier.h"

#include <hiredis/hiredis.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "tier/entry_codec.h"
#include "util/hex.h"

namespace clm {

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

// A reply read after a pipelined or plain command; null on an I/O error or
// a timeout (the context is then unusable).
Reply read_reply(redisContext* ctx) {
  void* r = nullptr;
  if (redisGetReply(ctx, &r) != REDIS_OK) return nullptr;
  return Reply(static_cast<redisReply*>(r));
}

Reply command(redisContext* ctx, const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(redisCommandArgv(ctx, static_cast<int>(args.size()), argv.data(), lens.data())));
}

bool is_error(const Reply& r) { return !r || r->type == REDIS_REPLY_ERROR; }

// Queues a command of a pipeline; its reply is read later with read_reply.
template <std::size_t N>
bool append(redisContext* ctx, const std::string_view (&args)[N]) {
  const char* argv[N];
  std::size_t lens[N];
  for (std::size_t i = 0; i < N; ++i) {
    argv[i] = args[i].data();
    lens[i] = args[i].size();
  }
  return redisAppendCommandArgv(ctx, static_cast<int>(N), argv, lens) == REDIS_OK;
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
              (geometry_.type == KvType::F16 ? "f16" : "f32") + "x" + std::to_string(geometry_.block_size) + ":";
}

RedisTier::~RedisTier() {
  drop(lookup_);
  drop(store_);
}

std::string RedisTier::key_name(BlockKey key) const { return key_base_ + hex64(key); }

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
  if (redisSetTimeout(link.ctx, to_timeval(options_.command_timeout_s)) != REDIS_OK) {
    drop(link);
    return false;
  }
  if (a.db != 0) {
    const std::string db = std::to_string(a.db);
    const Reply r = command(link.ctx, {"SELECT", db});
    if (is_error(r)) {
      drop(link);
      return false;
    }
  }
  return true;
}

bool RedisTier::call(Link& link, const std::function<bool(redisContext*)>& body) {
  std::lock_guard lock(link.mu);
  // Asked under the link's lock: a caller that waited behind a call that
  // timed out sees the breaker it opened and does not time out again.
  if (!breaker_.allow()) return false;
  // A connection older than the last trip may lead to a server that died
  // or restarted since (the breaker kept it idle): start afresh.
  if (link.ctx && link.epoch != breaker_.trips()) drop(link);
  if (!link.ctx && !connect(link)) {
    breaker_.record_failure();
    return false;
  }
  if (!body(link.ctx)) {
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
  call(lookup_, [&](redisContext* ctx) {
    // One round trip: every EXISTS is sent before the first reply is read.
    for (BlockKey key : chain) {
      const std::string name = key_name(key);
      const char* argv[] = {"EXISTS", name.data()};
      const std::size_t lens[] = {6, name.size()};
      if (redisAppendCommandArgv(ctx, 2, argv, lens) != REDIS_OK) return false;
    }
    bool leading = true;
    std::size_t n = 0;
    for (std::size_t i = 0; i < chain.size(); ++i) {
      const Reply r = read_reply(ctx);
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
  call(lookup_, [&](redisContext* ctx) {
    // A hit renews the entry's time to live, so that what is read stays and
    // what nobody reads expires: GET and EXPIRE in one round trip (GETEX
    // would need Redis 6.2).
    const std::string_view get[] = {"GET", name};
    const std::string_view expire[] = {"EXPIRE", name, ttl};
    if (!append(ctx, get) || !append(ctx, expire)) return false;
    const Reply r = read_reply(ctx);
    const Reply renewed = read_reply(ctx);
    if (is_error(r) || is_error(renewed)) return false;
    if (r->type == REDIS_REPLY_NIL) return true;
    if (r->type != REDIS_REPLY_STRING) return false;
    // The reply's K/V is copied once, into its destination.
    const EntryReader read = memory_reader(std::as_bytes(std::span<const char>(r->str, r->len)));
    Result<EntryHeader> header = read_entry_header(r->len, read);
    if (header && header_defect(header->entry, fingerprint_, key, geometry_) == nullptr &&
        read_entry_kv(*header, read, kv)) {
      out = std::move(header->entry);
      return true;
    }
    // Damaged or foreign under our key: a miss, and gone, so that the next
    // writer can replace it.
    damaged = true;
    return !is_error(command(ctx, {"DEL", name}));
  });
  if (damaged) {
    ++damaged_;
    if (removal_listener_) removal_listener_(std::span<const BlockKey>(&key, 1));
  }
  return out;
}

bool RedisTier::put(const TierEntry& entry) {
  const std::string name = key_name(entry.key);
  const std::vector<std::byte> bytes = encode_entry(entry);
  const std::string value(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::string ttl = std::to_string(options_.ttl_s);
  return call(store_, [&](redisContext* ctx) { return !is_error(command(ctx, {"SET", name, value, "EX", ttl})); });
}

void RedisTier::remove(BlockKey key) {
  const std::string name = key_name(key);
  if (call(store_, [&](redisContext* ctx) { return !is_error(command(ctx, {"DEL", name})); }) && removal_listener_)
    removal_listener_(std::span<const BlockKey>(&key, 1));
}

}  // namespace clm
