#include "engine/session_store.h"

#include <chrono>

namespace clm {

SessionStore::SessionStore(double timeout_s, std::size_t max_sessions, std::function<double()> clock)
    : timeout_s_(timeout_s), max_sessions_(max_sessions), clock_(std::move(clock)) {}

double SessionStore::now() const {
  if (clock_) return clock_();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void SessionStore::sweep_locked(double t) {
  std::erase_if(sessions_, [&](const auto& kv) { return t - kv.second.last_used > timeout_s_; });
}

SessionPrompt SessionStore::prompt_tokens(const std::string& id, const std::string& text, const Tokenizer& tok) {
  return prompt_tokens(id, PromptText::parsed(text), tok);
}

SessionPrompt SessionStore::prompt_tokens(const std::string& id, const PromptText& prompt, const Tokenizer& tok) {
  const std::string& text = prompt.text;
  SessionPrompt fresh{tok.encode(prompt, /*add_special=*/true), 0};
  if (id.empty()) return fresh;
  Turn turn;
  {
    std::lock_guard lock(mu_);
    sweep_locked(now());
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return fresh;
    it->second.last_used = now();
    turn = it->second;
  }
  if (turn.tokens.empty() || !text.starts_with(turn.text)) return fresh;
  std::vector<int32_t> rest_ids = tok.encode(prompt.suffix(turn.text.size()), /*add_special=*/false);
  const std::string want = tok.decode(fresh.tokens);
  auto candidate = [&](std::size_t skip) {
    std::vector<int32_t> ids = turn.tokens;
    ids.insert(ids.end(), rest_ids.begin() + static_cast<std::ptrdiff_t>(skip), rest_ids.end());
    return ids;
  };
  std::vector<int32_t> joined = candidate(0);
  if (tok.decode(joined) == want) return {std::move(joined), static_cast<int>(turn.tokens.size())};
  // SentencePiece gives a text it encodes on its own a leading space; in the
  // middle of a conversation that space is not there, so try without it.
  if (!rest_ids.empty() && tok.token_to_piece(rest_ids[0]) == " ") {
    joined = candidate(1);
    if (tok.decode(joined) == want) return {std::move(joined), static_cast<int>(turn.tokens.size())};
  }
  return fresh;
}

void SessionStore::remember(const std::string& id, std::string text, std::vector<int32_t> tokens) {
  if (id.empty()) return;
  std::lock_guard lock(mu_);
  const double t = now();
  sweep_locked(t);
  if (!sessions_.contains(id) && sessions_.size() >= max_sessions_) {
    // Full: forget the least recently used session.
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    sessions_.erase(oldest);
  }
  sessions_[id] = Turn{std::move(text), std::move(tokens), t};
}

std::size_t SessionStore::size() {
  std::lock_guard lock(mu_);
  sweep_locked(now());
  return sessions_.size();
}

}  // namespace clm
