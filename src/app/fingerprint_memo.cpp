#include "app/fingerprint_memo.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/model_source.h"

namespace clm {

namespace {

struct FileId {
  std::string key;  // absolute path
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

std::optional<FileId> identify(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  if (ec) return std::nullopt;
  const auto size = std::filesystem::file_size(abs, ec);
  if (ec) return std::nullopt;
  const auto mtime = std::filesystem::last_write_time(abs, ec);
  if (ec) return std::nullopt;
  return FileId{abs.lexically_normal().string(), size,
                static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count())};
}

nlohmann::json load_memo() {
  std::ifstream in(fingerprint_memo_path());
  if (!in) return nlohmann::json::object();
  auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace

std::string fingerprint_memo_path() { return user_cache_dir() + "/fingerprints.json"; }

std::optional<uint64_t> recall_fingerprint(const std::string& model_path) {
  const auto id = identify(model_path);
  if (!id) return std::nullopt;
  const nlohmann::json memo = load_memo();
  const auto it = memo.find(id->key);
  if (it == memo.end() || !it->is_object()) return std::nullopt;
  const auto& e = *it;
  if (!e.contains("size") || !e.contains("mtime_ns") || !e.contains("fingerprint") || !e["fingerprint"].is_string())
    return std::nullopt;
  if (!e["size"].is_number_unsigned() || e["size"].get<uint64_t>() != id->size) return std::nullopt;
  if (!e["mtime_ns"].is_number_integer() || e["mtime_ns"].get<int64_t>() != id->mtime_ns) return std::nullopt;
  try {
    std::size_t used = 0;
    const std::string hex = e["fingerprint"].get<std::string>();
    const uint64_t fp = std::stoull(hex, &used, 16);
    if (used != hex.size()) return std::nullopt;
    return fp;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void remember_fingerprint(const std::string& model_path, uint64_t fingerprint) {
  const auto id = identify(model_path);
  if (!id) return;
  nlohmann::json memo = load_memo();
  std::ostringstream hex;
  hex << std::hex << fingerprint;
  memo[id->key] = {{"size", id->size}, {"mtime_ns", id->mtime_ns}, {"fingerprint", hex.str()}};
  const std::string path = fingerprint_memo_path();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  // Write-temp-then-rename: a crash leaves the old memo or the new one.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << memo.dump(1) << "\n";
    if (!out) return;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace clm
