// SessionStore: remembers, per client-chosen session id, the exact token ids
// of the session's last turn (its prompt and the reply as generated) for a
// timeout. The next turn's prompt text usually extends that turn; re-encoding
// it would often give the reply different token ids than the model produced,
// which breaks the cached prefix right where the reply starts. Reusing the
// remembered ids keeps the whole history a prefix hit. A reuse is only made
// when it decodes to exactly the text a fresh encoding decodes to.
// Thread-safe. It holds token ids only, never KV blocks; observers (the
// server's session pins and its archive) are told of every change.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/tokenizer.h"
#include "tier/session_record.h"

namespace clm {

struct SessionPrompt {
  std::vector<int32_t> tokens;
  int reused_tokens = 0;  // leading tokens taken from the session's last turn
};

// Why a session was forgotten. Its timeout is also how long its pin lasts,
// so a session that timed out is a pin that lapsed, whichever noticed first.
enum class ForgetCause {
  TimedOut,   // unused for longer than the timeout
  Displaced,  // the store was full and a newer session took its place
  Damaged,    // restored from the archive with ids that are not this model's
};

// Told of every change, in order, under the store's lock: it must only hand
// the news over (queue it), never block or call the store back.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  // A session's latest turn (a new session, or the next turn of one).
  virtual void session_remembered(const SessionRecord& turn) = 0;
  virtual void session_forgotten(const std::string& id, ForgetCause cause) = 0;
};

class SessionStore {
 public:
  // timeout_s: a session unused for longer is forgotten. clock: seconds on a
  // monotonic clock (default steady_clock), replaceable in tests.
  explicit SessionStore(double timeout_s, std::size_t max_sessions = 10000,
                        std::function<double()> clock = {});

  // The prompt tokens for `text` (encoded with BOS and special tokens parsed).
  // An empty id, an unknown or expired session, or a text that does not
  // extend the remembered one gives a fresh encoding.
  SessionPrompt prompt_tokens(const std::string& id, const std::string& text, const Tokenizer& tokenizer);
  // The same for a prompt with literal ranges (Tokenizer::encode(PromptText)).
  SessionPrompt prompt_tokens(const std::string& id, const PromptText& prompt, const Tokenizer& tokenizer);
  // Stores the session's latest turn: `text` is what `tokens` decode to.
  void remember(const std::string& id, std::string text, std::vector<int32_t> tokens);
  std::size_t size();
  // Not owned; must outlive the store. Add observers before use.
  void add_observer(SessionObserver* observer);
  // Sessions kept by an earlier process (SessionArchive::load), aged by
  // their wall-clock last use against now_unix_ms. A record whose ids are
  // outside the vocabulary or do not decode to its text is skipped with one
  // log line (and forgotten); so is an expired one, silently. Returns how
  // many were restored.
  std::size_t restore(std::vector<SessionRecord> records, const Tokenizer& tokenizer, int64_t now_unix_ms);

 private:
  struct Turn {
    std::string text;
    std::vector<int32_t> tokens;
    double last_used = 0.0;
  };
  void sweep_locked(double now);
  void forget_locked(std::unordered_map<std::string, Turn>::iterator it, ForgetCause cause);
  double now() const;

  double timeout_s_;
  std::size_t max_sessions_;
  std::function<double()> clock_;
  std::mutex mu_;
  std::unordered_map<std::string, Turn> sessions_;
  std::vector<SessionObserver*> observers_;
};

}  // namespace clm
