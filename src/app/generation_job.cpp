#include "app/generation_job.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>

#include "app/cache_namespace.h"
#include "engine/request_settings.h"

namespace clm {

namespace {

std::string endpoint_path(ApiEndpoint e) { return e == ApiEndpoint::Chat ? "/v1/chat/completions" : "/v1/completions"; }

// How many logprob entries (chosen token plus alternatives) the response
// can carry at most: each generated token, and with echo each token of the
// prompt as tokenized (a prompt under a KV budget may be far past n_ctx).
std::size_t logprob_entries_bound(const GenerationRequest& r, std::size_t prompt_tokens) {
  if (!r.logprobs) return 0;
  const std::size_t tokens = static_cast<std::size_t>(r.max_tokens) + (r.echo ? prompt_tokens : 0);
  return tokens * (1 + static_cast<std::size_t>(r.top_logprobs));
}

}  // namespace

GenerationJob::GenerationJob(ServerContext& ctx, GenerationRequest request)
    : ctx_(ctx), request_(std::move(request)), stop_({}) {}

std::expected<std::unique_ptr<GenerationJob>, ApiError> GenerationJob::start(ServerContext& ctx,
                                                                            GenerationRequest request,
                                                                            TokenStream::ReadyCallback on_ready) {
  if (ctx.draining) {
    return std::unexpected(shutting_down_error("the server is shutting down", ctx.options.retry_after_s));
  }
  std::unique_ptr<GenerationJob> job(new GenerationJob(ctx, std::move(request)));
  GenerationRequest& r = job->request_;
  const Tokenizer& tok = ctx.engine.model().tokenizer();
  std::vector<std::string> stops = r.stop;
  PromptText prompt;
  if (r.endpoint == ApiEndpoint::Chat) {
    auto rendered = ctx.chat.render_prompt(r.messages, /*add_generation_prompt=*/true);
    if (!rendered) return std::unexpected(invalid_field_error("messages", rendered.error().message));
    prompt = std::move(*rendered);
    for (const auto& s : ctx.chat.stop_strings()) stops.push_back(s);
  } else {
    prompt = r.parse_special ? PromptText::parsed(r.prompt) : PromptText::all_literal(r.prompt);
  }
  job->prompt_text_ = prompt.text;
  job->stop_ = StopStringFilter(std::move(stops));
  if (!r.prompt_ids.empty()) {
    // Ids are used as given (parsing checked them against the vocabulary, and
    // the scheduler does again); sessions work on text, so they play no part.
    job->prompt_ = r.prompt_ids;
    job->prompt_text_ = tok.decode(job->prompt_);
  }
  const std::string param = r.endpoint == ApiEndpoint::Chat ? "messages" : "prompt";
  const int n_ctx = ctx.engine.options().scheduler.n_ctx;
  // With a KV budget the sequence forgets as it goes: the context does not
  // bound it (the prompt's bytes still do).
  const int kv_budget = resolve_request_settings(ctx.engine.options().scheduler, r.overrides).kv_budget_tokens;
  if (r.prompt_ids.empty()) {
    // Tokenizing stops once the prompt cannot fit, so a long one costs what
    // the context would, not its length.
    const std::size_t fits = kv_budget > 0 ? std::numeric_limits<std::size_t>::max()
                             : n_ctx > 1   ? static_cast<std::size_t>(n_ctx) - 1
                                           : 0;
    BoundedTokens bounded = tok.encode_bounded(prompt, /*add_special=*/true, fits);
    if (bounded.exceeded)
      return std::unexpected(api_error(ErrorKind::ContextExceeded,
                                       "the prompt is more than " + std::to_string(fits) +
                                           " tokens; this server's context holds " + std::to_string(n_ctx),
                                       param, "context_length_exceeded"));
    // Without a session the bounded encoding is the prompt (it is exactly
    // encode's); a session may reuse the ids of its last turn instead.
    job->prompt_ = r.session_id.empty()
                       ? std::move(bounded.tokens)
                       : ctx.sessions.prompt_tokens(scoped_session_id(r.cache_namespace, r.session_id), prompt, tok)
                             .tokens;
  }
  if (job->prompt_.empty())
    return std::unexpected(invalid_field_error(param, "the prompt is empty and the model adds no BOS token"));
  if (kv_budget == 0 && static_cast<int>(job->prompt_.size()) >= n_ctx)
    return std::unexpected(api_error(ErrorKind::ContextExceeded,
                                     "the prompt is " + std::to_string(job->prompt_.size()) +
                                         " tokens; this server's context holds " + std::to_string(n_ctx),
                                     param, "context_length_exceeded"));
  const std::size_t max_entries = ctx.options.limits.max_logprob_entries;
  if (logprob_entries_bound(r, job->prompt_.size()) > max_entries)
    return std::unexpected(invalid_field_error("top_logprobs",
                                               "logprobs for this many tokens and alternatives could exceed " +
                                                   std::to_string(max_entries) +
                                                   " entries; ask for fewer max_tokens or top_logprobs",
                                               "logprobs_too_large"));

  Request sr;
  sr.prompt = job->prompt_;
  sr.max_tokens = r.max_tokens;
  sr.stop_at_end_of_generation = !r.ignore_eos;
  sr.top_logprobs = r.logprobs ? r.top_logprobs : 0;
  sr.prompt_logprobs = r.echo && r.logprobs ? r.top_logprobs : -1;
  sr.prompt_logprobs_from = r.logprob_start_len.value_or(-1);
  sr.cache_namespace = r.cache_namespace;
  sr.overrides = r.overrides;
  sr.sampler = r.sampler;
  const bool on_ready_set = static_cast<bool>(on_ready);
  auto stream = ctx.engine.open_stream(std::move(sr), std::move(on_ready));
  // The scheduler says why it refused (a full queue is 429, a stopped one 503).
  if (!stream) return std::unexpected(api_error_from(stream.error(), param, ctx.options.retry_after_s));
  job->event_driven_ = on_ready_set;
  job->stream_ = std::move(*stream);
  job->decoder_ = std::make_unique<StreamDecoder>(tok);
  job->meta_ = {r.endpoint, make_response_id(r.endpoint), static_cast<int64_t>(std::time(nullptr)), r.model};
  ++ctx.in_flight;
  return job;
}

GenerationJob::~GenerationJob() {
  if (!stream_) return;
  // Not done: the client is gone (the handler gave up on it).
  if (!done_) stream_->cancel(CancelCause::Client);
  stream_.reset();
  --ctx_.in_flight;
}

GenerationJob::Step GenerationJob::next() {
  if (done_) return take(std::nullopt);
  return take(stream_->next());
}

std::optional<GenerationJob::Step> GenerationJob::poll() {
  if (done_) return std::nullopt;
  TokenEvent ev;
  for (;;) {
    const TokenStream::Poll got = stream_->poll(ev);
    if (got == TokenStream::Poll::Pending) return std::nullopt;
    if (!awaiting_end_) return take(got == TokenStream::Poll::Token ? std::optional<TokenEvent>(std::move(ev)) : std::nullopt);
    // After a stop string: tokens still in flight are dropped; the end
    // brings the summary.
    if (got == TokenStream::Poll::Ended) {
      Step step;
      step.text_offset = text_.size();
      finish();
      return step;
    }
  }
}

GenerationJob::Step GenerationJob::take(std::optional<TokenEvent> ev) {
  Step step;
  step.text_offset = text_.size();
  if (done_) return step;
  const Tokenizer& tok = ctx_.engine.model().tokenizer();
  if (ev) {
    ++consumed_;
    if (!tok.is_end_of_generation(ev->id)) {
      generated_.push_back(ev->id);
      const std::string piece = decoder_->push(ev->id);
      raw_text_ += piece;
      step.text = stop_.push(piece);
    }
    if (request_.logprobs) step.logprobs.push_back(logprob_entry(ev->id, ev->logprob, ev->top_logprobs));
    if (stop_.stopped()) {
      stopped_by_string_ = true;
      stream_->cancel(CancelCause::StopString);
      if (event_driven_) {
        awaiting_end_ = true;  // poll() finishes once the stream ends
      } else {
        while (stream_->next()) {
        }
        finish();
      }
    }
  } else {
    const std::string tail = decoder_->flush();
    raw_text_ += tail;
    step.text = stop_.push(tail);
    step.text += stop_.flush();
    stopped_by_string_ = stop_.stopped();
    finish();
  }
  text_ += step.text;
  return step;
}

void GenerationJob::finish() {
  done_ = true;
  summary_ = stream_->summary();
  if (summary_.stop_reason == StopReason::Error) {
    error_ = server_error("generation failed: " + summary_.error);
  } else if (summary_.stop_reason == StopReason::Cancelled && !stopped_by_string_) {
    error_ = shutting_down_error("the generation was cancelled: the server is shutting down", ctx_.options.retry_after_s);
  }
  ctx_.metrics.record_generation(endpoint_path(request_.endpoint), static_cast<int>(prompt_.size()),
                                 summary_.cached_tokens, summary_.reuse, consumed_, summary_.total_s,
                                 consumed_ > 0 ? summary_.time_to_first_token_s : -1.0);
  record_for_dashboard();
  if (!error_ && !request_.session_id.empty() && request_.prompt_ids.empty()) {
    std::vector<int32_t> turn = prompt_;
    turn.insert(turn.end(), generated_.begin(), generated_.end());
    ctx_.sessions.remember(scoped_session_id(request_.cache_namespace, request_.session_id), prompt_text_ + raw_text_, std::move(turn));
  }
}

void GenerationJob::record_for_dashboard() {
  DashboardRequest r;
  r.id = summary_.id;
  r.endpoint = endpoint_path(request_.endpoint);
  r.finished_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx_.started).count();
  r.prompt_tokens = static_cast<int>(prompt_.size());
  r.generated_tokens = consumed_;
  r.usage = summary_.reuse;
  r.map = summary_.reuse_map;
  const Tokenizer& tok = ctx_.engine.model().tokenizer();
  // A request in a namespace of its own (a cache_salt, a per-key namespace)
  // keeps its text from whoever else may read the dashboard: its map is
  // drawn without it.
  const std::size_t shown = request_.cache_namespace != 0 ? 0 : std::min(prompt_.size(), kDashboardTokensShown);
  r.token_text.reserve(shown);
  for (std::size_t i = 0; i < shown; ++i) r.token_text.push_back(tok.token_to_piece(prompt_[i]));
  ctx_.dashboard.add_request(std::move(r));
}

std::optional<FinishDetails> GenerationJob::finish_details() const {
  if (!summary_.preempt_cause) return std::nullopt;
  return FinishDetails{"preempted", std::string(to_string(*summary_.preempt_cause)), summary_.note};
}

std::string GenerationJob::finish_reason() const {
  if (stopped_by_string_) return "stop";
  return summary_.stop_reason == StopReason::Length ? "length" : "stop";
}

Usage GenerationJob::usage() const {
  return {static_cast<int>(prompt_.size()), consumed_, summary_.cached_tokens, summary_.reuse, summary_.blend_probed,
          summary_.prefill_flops, summary_.evicted_tokens};
}

TokenLogprob GenerationJob::logprob_entry(int32_t id, std::optional<float> logprob,
                                          const std::vector<std::pair<int32_t, float>>& top) const {
  const Tokenizer& tok = ctx_.engine.model().tokenizer();
  const bool as_ids = request_.return_tokens_as_token_ids;
  auto name = [&](int32_t t) { return as_ids ? "token_id:" + std::to_string(t) : tok.token_to_piece(t); };
  TokenLogprob out{name(id), logprob, {}, std::nullopt};
  if (as_ids) out.text_bytes = tok.token_to_piece(id).size();
  if (logprob)
    for (const auto& [t, lp] : top) out.top.emplace_back(name(t), lp);
  return out;
}

std::vector<TokenLogprob> GenerationJob::prompt_logprobs() const {
  const std::vector<std::optional<PromptLogprob>>& scored = summary_.prompt_logprobs;
  std::vector<TokenLogprob> out;
  out.reserve(prompt_.size());
  for (std::size_t i = 0; i < prompt_.size(); ++i) {
    // Nothing predicts the first token, whatever the scheduler reports.
    const bool has = i > 0 && i < scored.size() && scored[i].has_value();
    out.push_back(has ? logprob_entry(prompt_[i], scored[i]->logprob, scored[i]->top)
                      : logprob_entry(prompt_[i], std::nullopt, {}));
  }
  return out;
}

}  // namespace clm
