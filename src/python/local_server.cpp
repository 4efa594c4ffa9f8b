#include "python/local_server.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "app/generation_api.h"
#include "app/stats_report.h"

namespace clm {

std::expected<std::unique_ptr<LocalServer>, OpenError> LocalServer::open(const std::vector<std::string>& args) {
  std::unique_ptr<LocalServer> s(new LocalServer());
  CLI::App cli("clmcache", "clmcache");
  add_serving_flags(cli, s->flags_);
  try {
    // CLI11 takes a vector of arguments last first.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    cli.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return std::unexpected(OpenError{true, e.what()});
  }
  if (auto checked = check_serving_flags(s->flags_); !checked)
    return std::unexpected(OpenError{true, checked.error().message});
  auto engine = open_engine(s->flags_.engine, /*show_progress=*/false);
  if (!engine) return std::unexpected(OpenError{false, engine.error().message});
  s->engine_ = std::move(*engine);
  Model& model = s->engine_->model();
  auto renderer = open_chat_renderer(s->flags_.chat, model.file(), model.tokenizer(), &s->chat_warning_);
  if (!renderer) return std::unexpected(OpenError{true, renderer.error().message});
  fit_server_options(s->flags_, *s->engine_);
  s->context_ = std::make_unique<ServerContext>(*s->engine_, s->flags_.server, std::move(*renderer));
  if (s->flags_.persist_sessions) {
    auto persisted = PersistedSessions::open(s->flags_.engine.tiers.disk_cache, s->context_->sessions,
                                             model.tokenizer(), s->flags_.server.session_timeout_s);
    if (!persisted) return std::unexpected(OpenError{false, persisted.error().message});
    s->persisted_ = std::move(*persisted);
  }
  s->engine_->start();
  return s;
}

LocalServer::~LocalServer() { close(0.0); }

std::expected<std::unique_ptr<GenerationJob>, ApiError> LocalServer::start(ApiEndpoint endpoint,
                                                                          const nlohmann::json& body) {
  // A closed server's context is draining: GenerationJob::start says 503.
  return start_generation(*context_, endpoint, body);
}

nlohmann::json LocalServer::stats() { return server_stats_json(*context_); }

std::vector<int32_t> LocalServer::tokenize(const std::string& text, bool add_special, bool parse_special) {
  return engine_->model().tokenizer().encode(text, add_special, parse_special);
}

Result<std::string> LocalServer::detokenize(const std::vector<int32_t>& ids) {
  const Tokenizer& tok = engine_->model().tokenizer();
  for (int32_t id : ids)
    if (id < 0 || id >= tok.n_vocab())
      return fail("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                  std::to_string(tok.n_vocab() - 1) + ")");
  return tok.decode(ids);
}

Status LocalServer::set_disk_cache_max_bytes(uint64_t bytes) {
  TierSet* tiers = engine_->tiers();
  if (!tiers || tiers->set_storage_cap(bytes) == 0)
    return fail("there is no disk cache to cap: start the engine with disk_cache=DIR or disk_cache=\"sqlite:FILE\"");
  return {};
}

void LocalServer::close(double grace_s) {
  std::lock_guard lock(close_mu_);
  if (closed_ || !context_) return;
  closed_ = true;
  ServerContext& ctx = *context_;
  ctx.draining = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(grace_s, 0.0));
  while (ctx.in_flight > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Cancels what still runs: each job's stream ends, its caller wakes.
  engine_->stop();
  if (TierSet* tiers = engine_->tiers()) tiers->flush();
}

}  // namespace clm
