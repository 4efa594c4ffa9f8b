// LocalServer: `clmcache serve` without its socket, for the Python module.
// The same flags (given as a command line), the same engine, sessions, chat
// renderer and generation API (app/generation_api.h), so that a request
// called in process means and returns exactly what it would over HTTP.
// Thread-safe: many threads may run generations at once, and they share
// the scheduler's continuous batches.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/api_error.h"
#include "app/generation_job.h"
#include "app/serving_flags.h"
#include "app/session_persistence.h"
#include "util/error.h"

namespace clm {

// A bad flag (its name and what is wrong) versus a failure to start (a
// model that does not load, a tier that does not open).
struct OpenError {
  bool bad_argument = false;
  std::string message;
};

class LocalServer {
 public:
  // args: serving flags as on the command line ("--ctx-size", "2048", ...).
  static std::expected<std::unique_ptr<LocalServer>, OpenError> open(const std::vector<std::string>& args);
  ~LocalServer();  // close(0)
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  // A request body as POST /v1/completions or /v1/chat/completions takes
  // it, started; refusals carry their HTTP status. After close(): 503.
  std::expected<std::unique_ptr<GenerationJob>, ApiError> start(ApiEndpoint endpoint, const nlohmann::json& body);
  // What GET /stats answers.
  nlohmann::json stats();
  std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool parse_special);
  // Ids outside the vocabulary are an error naming the first one.
  Result<std::string> detokenize(const std::vector<int32_t>& ids);
  // Sets the size cap of the disk or SQLite tier; an error without one.
  Status set_disk_cache_max_bytes(uint64_t bytes);
  // Refuses new generations, lets running ones finish for up to grace_s,
  // cancels the rest, stops the scheduler and writes every queued tier
  // entry, as SIGTERM does to `serve`. Idempotent.
  void close(double grace_s);
  bool closed() const { return closed_; }

  // Said once at start, when the model's chat template was not usable.
  const std::string& chat_warning() const { return chat_warning_; }
  Engine& engine() { return *engine_; }

 private:
  LocalServer() = default;
  ServingFlags flags_;
  std::string chat_warning_;
  bool closed_ = false;
  std::mutex close_mu_;
  // Destroyed in reverse: the context (sessions) before what watches it,
  // and everything before the engine.
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<PersistedSessions> persisted_;
  std::unique_ptr<ServerContext> context_;
};

}  // namespace clm
