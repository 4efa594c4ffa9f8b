// The callbacks push into a state shared with the stream, so a stream
// destroyed early never leaves the scheduler holding a dangling pointer.
#include "engine/token_stream.h"

#include "engine/scheduler.h"

#include "util/check.h"

namespace clm {

Result<std::unique_ptr<TokenStream>> TokenStream::open(Scheduler& scheduler, Request request,
                                                       ReadyCallback on_ready) {
  std::unique_ptr<TokenStream> stream(new TokenStream());
  stream->scheduler_ = &scheduler;
  stream->state_ = std::make_shared<State>();
  auto on_token = [state = stream->state_, on_ready](const TokenEvent& ev) {
    {
      std::lock_guard lock(state->mu);
      state->events.push_back(ev);
    }
    state->cv.notify_all();
    if (on_ready) on_ready();
    return true;
  };
  auto on_done = [state = stream->state_, on_ready](const RequestSummary& summary) {
    {
      std::lock_guard lock(state->mu);
      state->done = true;
      state->summary = summary;
    }
    state->cv.notify_all();
    if (on_ready) on_ready();
  };
  auto id = scheduler.submit(std::move(request), on_token, on_done);
  if (!id) return std::unexpected(id.error());
  stream->id_ = *id;
  return stream;
}

TokenStream::~TokenStream() {
  bool done = false;
  {
    std::lock_guard lock(state_->mu);
    done = state_->done;
  }
  if (!done) cancel();
}

std::optional<TokenEvent> TokenStream::next() {
  for (;;) {
    const bool pull = !scheduler_->started();
    {
      std::unique_lock lock(state_->mu);
      if (!pull) state_->cv.wait(lock, [&] { return !state_->events.empty() || state_->done; });
      if (!state_->events.empty()) {
        TokenEvent ev = std::move(state_->events.front());
        state_->events.pop_front();
        return ev;
      }
      if (state_->done) {
        summary_ = state_->summary;
        return std::nullopt;
      }
    }
    // No loop thread: this caller drives the scheduler. Our request is not
    // done, so there is work and a step always progresses.
    CLM_CHECK(scheduler_->step(), "scheduler made no progress with a stream open");
  }
}

TokenStream::Poll TokenStream::poll(TokenEvent& out) {
  std::lock_guard lock(state_->mu);
  if (!state_->events.empty()) {
    out = std::move(state_->events.front());
    state_->events.pop_front();
    return Poll::Token;
  }
  if (state_->done) {
    summary_ = state_->summary;
    return Poll::Ended;
  }
  return Poll::Pending;
}

void TokenStream::cancel(CancelCause cause) { scheduler_->cancel(id_, cause); }

}  // namespace clm
