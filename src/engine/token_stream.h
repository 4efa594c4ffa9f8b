// TokenStream: one request's tokens as a caller pulls or polls them, over
// the scheduler's callbacks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/request.h"
#include "util/error.h"

namespace clm {

class Scheduler;

// A blocking iterator over one request's tokens, for callers that prefer to
// pull: next() returns tokens until the request ends, then nullopt. When the
// scheduler has no loop thread, next() steps it on the caller's thread.
// Event-driven callers pass on_ready instead and call poll(), which never
// blocks: on_ready runs on the scheduler's thread after each token and at the
// end, so it must only hand the news over (post to an event loop), not wait.
class TokenStream {
 public:
  using ReadyCallback = std::function<void()>;
  static Result<std::unique_ptr<TokenStream>> open(Scheduler& scheduler, Request request,
                                                   ReadyCallback on_ready = {});
  ~TokenStream();  // cancels the request if it is still running
  TokenStream(const TokenStream&) = delete;
  TokenStream& operator=(const TokenStream&) = delete;
  std::optional<TokenEvent> next();
  enum class Poll { Token, Ended, Pending };
  // Token: `out` holds the next token. Ended: as next() returning nullopt.
  // Pending: nothing yet (only with a started scheduler).
  Poll poll(TokenEvent& out);
  // Valid once next() has returned nullopt or poll() Ended.
  const RequestSummary& summary() const { return summary_; }
  RequestId id() const { return id_; }
  void cancel(CancelCause cause = CancelCause::Client);

 private:
  // Shared with the callbacks, which may outlive the stream.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<TokenEvent> events;
    bool done = false;
    RequestSummary summary;
  };
  TokenStream() = default;
  Scheduler* scheduler_ = nullptr;
  RequestId id_ = 0;
  std::shared_ptr<State> state_;
  RequestSummary summary_;
};

}  // namespace clm
