// `clmcache cache ls|stats|verify|gc|clear SPEC`: looks after a persistent
// cache (a disk cache directory, or sqlite:FILE) without a model or a
// server. Opening the store recovers it as a server start would (see
// DiskStore::open); the subcommands then list, count, verify, collect or
// clear its entries.
#include <charconv>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "tier/open_cache_tier.h"
#include "util/hex.h"

namespace clm {

namespace {

struct CacheFlags {
  std::string spec;
  std::string prefix;  // hex key: that entry and its dependents
  bool json = false;
  double max_gb = 0;   // gc: the size cap
};

std::string utc_time(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// The root of --prefix, or nullopt for the whole store; false on a bad key.
bool parse_prefix(const std::string& text, std::optional<BlockKey>& root) {
  if (text.empty()) return true;
  BlockKey key = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), key, 16);
  if (text.size() > 16 || ec != std::errc() || end != text.data() + text.size() || key == kNoKey) return false;
  root = key;
  return true;
}

// Opens the store for administration: it must already exist (a typo must
// not create an empty cache).
Result<std::unique_ptr<EntryStore>> open_existing(const CacheFlags& flags) {
  constexpr std::string_view kSqlite = "sqlite:";
  const std::string path = flags.spec.starts_with(kSqlite) ? flags.spec.substr(kSqlite.size()) : flags.spec;
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return fail("no cache at " + flags.spec);
  // A directory is a cache when it has the index or the quarantine (the
  // index may be lost): never recover, and so write into, another directory.
  if (std::filesystem::is_directory(path, ec) && !std::filesystem::exists(path + "/index.sqlite", ec) &&
      !std::filesystem::is_directory(path + "/quarantine", ec))
    return fail(flags.spec + " is not a disk cache directory (no index.sqlite, no quarantine/)");
  DiskTierOptions options;
  if (flags.max_gb < 0) return fail("--max-gb must not be negative");
  options.max_bytes = static_cast<uint64_t>(flags.max_gb * 1e9);
  return open_entry_store(flags.spec, options);
}

nlohmann::json entry_json(const StoredEntry& e) {
  return {{"key", hex64(e.key)},
          {"parent", hex64(e.parent)},
          {"fingerprint", hex64(e.fingerprint)},
          {"size", e.size},
          {"hits", e.hits},
          {"created", utc_time(e.created_ms)},
          {"last_access", utc_time(e.last_access_ms)},
          {"ttl_s", e.ttl_s}};
}

int list_entries(EntryStore& store, const CacheFlags& flags, std::optional<BlockKey> root) {
  const std::vector<StoredEntry> entries = store.list(root);
  if (flags.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const StoredEntry& e : entries) out.push_back(entry_json(e));
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%-16s  %-16s  %-16s  %10s  %6s  %-20s\n", "key", "parent", "model", "bytes", "hits", "last access");
  for (const StoredEntry& e : entries)
    std::printf("%s  %s  %s  %10llu  %6lld  %s\n", hex64(e.key).c_str(), hex64(e.parent).c_str(),
                hex64(e.fingerprint).c_str(), static_cast<unsigned long long>(e.size),
                static_cast<long long>(e.hits), utc_time(e.last_access_ms).c_str());
  return 0;
}

int show_stats(EntryStore& store, const CacheFlags& flags, std::optional<BlockKey> root) {
  const std::vector<StoredEntry> entries = store.list(root);
  uint64_t bytes = 0;
  int64_t hits = 0;
  std::size_t chains = 0;
  std::map<uint64_t, std::size_t> per_model;
  for (const StoredEntry& e : entries) {
    bytes += e.size;
    hits += e.hits;
    chains += e.parent == kNoKey;
    ++per_model[e.fingerprint];
  }
  nlohmann::json models = nlohmann::json::object();
  for (const auto& [fingerprint, count] : per_model) models[hex64(fingerprint)] = count;
  const nlohmann::json out = {{"store", store.kind()},      {"location", store.location()},
                              {"entries", entries.size()},  {"bytes", bytes},
                              {"chains", chains},           {"hits", hits},
                              {"models", models},           {"quarantined", store.quarantine_size()},
                              {"disk_cache_size_gb", static_cast<double>(bytes) / 1e9}};
  if (flags.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("store        %s %s\n", store.kind().c_str(), store.location().c_str());
  std::printf("entries      %zu in %zu chains, %.3f GB\n", entries.size(), chains, static_cast<double>(bytes) / 1e9);
  std::printf("hits         %lld\n", static_cast<long long>(hits));
  for (const auto& [fingerprint, count] : per_model)
    std::printf("model        %s: %zu entries\n", hex64(fingerprint).c_str(), count);
  std::printf("quarantined  %zu\n", store.quarantine_size());
  std::printf("disk_cache_size_gb  %.6f\n", static_cast<double>(bytes) / 1e9);
  return 0;
}

int run_cache(const std::string& action, const CacheFlags& flags) {
  std::optional<BlockKey> root;
  if (!parse_prefix(flags.prefix, root)) {
    std::fprintf(stderr, "error: --prefix must be a block key of 1 to 16 hex digits, got '%s'\n", flags.prefix.c_str());
    return 2;
  }
  auto store = open_existing(flags);
  if (!store) {
    std::fprintf(stderr, "error: %s\n", store.error().message.c_str());
    return 1;
  }
  EntryStore& s = **store;
  if (action == "ls") return list_entries(s, flags, root);
  if (action == "stats") return show_stats(s, flags, root);
  if (action == "verify") {
    const uint64_t dependents_before = s.counters().dependents_removed;
    const VerifyReport report = s.verify(root);
    const auto dependents = static_cast<std::size_t>(s.counters().dependents_removed - dependents_before);
    std::printf("verified %zu entries: %zu damaged and quarantined, %zu dependents removed\n", report.checked,
                report.quarantined, dependents);
    return report.quarantined == 0 ? 0 : 1;
  }
  if (action == "gc") {
    std::printf("removed %zu entries (expired, over the size cap, or depending on those)\n", s.gc());
    return 0;
  }
  std::printf("removed %zu entries\n", s.clear(root));
  return 0;
}

}  // namespace

void register_cache_command(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("cache", "look after a persistent KV cache (a disk cache directory or sqlite:FILE)");
  group->require_subcommand(1);
  struct Action {
    const char* name;
    const char* help;
  };
  const Action actions[] = {
      {"ls", "list the entries"},
      {"stats", "totals: entries, bytes, chains, hits, models, quarantined entries"},
      {"verify", "read and check every entry; quarantine damaged ones (exit 1 when any was found)"},
      {"gc", "remove expired entries, then the least recently used ones over --max-gb"},
      {"clear", "remove every entry, or with --prefix one entry and everything that depends on it"},
  };
  for (const Action& action : actions) {
    auto flags = std::make_shared<CacheFlags>();
    CLI::App* cmd = group->add_subcommand(action.name, action.help);
    cmd->add_option("spec", flags->spec, "the cache: a directory, or sqlite:FILE")->required();
    const std::string name = action.name;
    if (name != "gc")
      cmd->add_option("--prefix", flags->prefix, "only the entry with this key (hex) and the entries that depend on it");
    if (name == "ls" || name == "stats") cmd->add_flag("--json", flags->json, "print JSON");
    if (name == "gc") cmd->add_option("--max-gb", flags->max_gb, "size cap in GB (10^9 bytes); 0: none (the default)");
    cmd->callback([name, flags, &exit_code] { exit_code = run_cache(name, *flags); });
  }
}

}  // namespace clm
