#include "engine/session_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace clm {

SessionStore::SessionStore(double timeout_s, std::size_t max_sessions, std::function<double()> clock)
    : timeout_s_(timeout_s), max_sessions_(max_sessions), clock_(std::move(clock)) {}

double SessionStore::now() const {
  if (clock_) return clock_();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void SessionStore::sweep_locked(double t) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    auto here = it++;
    if (t - here->second.last_used > timeout_s_) forget_locked(here, ForgetCause::TimedOut);
  }
}

void SessionStore::forget_locked(std::unordered_map<std::string, Turn>::iterator it, ForgetCause cause) {
  for (SessionObserver* o : observers_) o->session_forgotten(it->first, cause);
  sessions_.erase(it);
}

void SessionStore::add_observer(SessionObserver* observer) {
  std::lock_guard lock(mu_);
  observers_.push_back(observer);
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
    forget_locked(oldest, ForgetCause::Displaced);
  }
  Turn& turn = sessions_[id];
  turn = Turn{std::move(text), std::move(tokens), t};
  if (observers_.empty()) return;
  const SessionRecord record{id, turn.text, turn.tokens, unix_ms_now()};
  for (SessionObserver* o : observers_) o->session_remembered(record);
}

std::size_t SessionStore::restore(std::vector<SessionRecord> records, const Tokenizer& tok, int64_t now_unix_ms) {
  std::lock_guard lock(mu_);
  const double t = now();
  std::size_t restored = 0;
  // Newest first: when there are more than the store holds, the oldest stay out.
  std::sort(records.begin(), records.end(),
            [](const SessionRecord& a, const SessionRecord& b) { return a.last_used_unix_ms > b.last_used_unix_ms; });
  for (SessionRecord& r : records) {
    const double age_s = static_cast<double>(now_unix_ms - r.last_used_unix_ms) / 1000.0;
    bool intact = !r.id.empty() && !r.tokens.empty();
    for (int32_t id : r.tokens) intact = intact && id >= 0 && id < tok.n_vocab();
    intact = intact && tok.decode(r.tokens) == r.text;
    if (!intact) {
      std::fprintf(stderr,
                   "clmcache: skipped a damaged session (id of %zu bytes): its tokens are not this model's or do "
                   "not decode to its text\n",
                   r.id.size());
    }
    if (!intact || age_s > timeout_s_) {
      for (SessionObserver* o : observers_)
        o->session_forgotten(r.id, intact ? ForgetCause::TimedOut : ForgetCause::Damaged);
      continue;
    }
    if (!sessions_.contains(r.id) && sessions_.size() >= max_sessions_) break;
    // A clock that runs backwards between the two processes makes no
    // session younger than now.
    sessions_[r.id] = Turn{std::move(r.text), std::move(r.tokens), t - std::max(0.0, age_s)};
    ++restored;
  }
  return restored;
}

std::size_t SessionStore::size() {
  std::lock_guard lock(mu_);
  sweep_locked(now());
  return sessions_.size();
}

}  // namespace clm
