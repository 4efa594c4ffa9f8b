// GenerationJob: one OpenAI completion request running in the scheduler, seen
// from an HTTP handler thread. It renders and tokenizes the prompt (or takes
// its token ids), submits it, and turns the token stream into released text
// (stop strings held back and cut), logprobs and usage, and for echo the
// prompt's text and log-probabilities. Destroying a job that is still generating
// cancels it, which is how a client that hangs up stops its generation.
#pragma once

#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/api_error.h"
#include "app/openai_request.h"
#include "app/openai_response.h"
#include "app/server_context.h"
#include "app/stop_strings.h"
#include "engine/token_stream.h"

namespace clm {

class GenerationJob {
 public:
  // Refuses with the right status: 400 (prompt too long or empty), 429 (queue
  // full), 503 (shutting down). With on_ready (see TokenStream::open), the
  // caller is told when poll() has something, and must not call next().
  static std::expected<std::unique_ptr<GenerationJob>, ApiError> start(ServerContext& ctx, GenerationRequest request,
                                                                      TokenStream::ReadyCallback on_ready = {});
  ~GenerationJob();
  GenerationJob(const GenerationJob&) = delete;
  GenerationJob& operator=(const GenerationJob&) = delete;

  struct Step {
    std::string text;                     // released by this step; may be empty
    std::vector<TokenLogprob> logprobs;   // the tokens consumed, when requested
    std::size_t text_offset = 0;          // where `text` starts in the reply
  };
  // Blocks for the next token. After the generation ends, done() is true and
  // the step carries whatever text was still held back.
  Step next();
  // Never blocks: the next step when a token (or the end) has arrived, else
  // nullopt.
  std::optional<Step> poll();
  bool done() const { return done_; }

  const GenerationRequest& request() const { return request_; }
  const ResponseMeta& meta() const { return meta_; }
  // Valid once done().
  std::string finish_reason() const;
  // Why it ended early (preempted), beside finish_reason; nullopt otherwise.
  std::optional<FinishDetails> finish_details() const;
  Usage usage() const;
  const std::optional<ApiError>& error() const { return error_; }
  // The whole reply text released so far.
  const std::string& text() const { return text_; }
  // The prompt as the scheduler got it, and the ids generated so far
  // (end-of-generation ids excluded), for callers that want tokens.
  const std::vector<int32_t>& prompt_ids() const { return prompt_; }
  const std::vector<int32_t>& generated_ids() const { return generated_; }
  // With echo: the prompt's text (as given, or decoded from its ids), which
  // the choice's text starts with. Otherwise empty.
  std::string echo_text() const { return request_.echo ? prompt_text_ : std::string(); }
  // With echo and logprobs, once done(): one entry per prompt token, the
  // first and those whose predecessor's K/V was reused without a logprob.
  std::vector<TokenLogprob> prompt_logprobs() const;

 private:
  GenerationJob(ServerContext& ctx, GenerationRequest request);
  // The step for one token, or for the end of the stream (nullopt).
  Step take(std::optional<TokenEvent> ev);
  void finish();
  // Hands the finished request's reuse map to the dashboard's history.
  void record_for_dashboard();
  // How a token appears in logprobs: its text, or token_id:N when asked.
  TokenLogprob logprob_entry(int32_t id, std::optional<float> logprob,
                             const std::vector<std::pair<int32_t, float>>& top) const;

  ServerContext& ctx_;
  GenerationRequest request_;
  ResponseMeta meta_;
  std::string prompt_text_;
  std::vector<int32_t> prompt_;
  std::unique_ptr<TokenStream> stream_;
  std::unique_ptr<StreamDecoder> decoder_;
  StopStringFilter stop_;
  std::vector<int32_t> generated_;  // every id received, end-of-generation ids excluded
  std::string raw_text_;            // their text before stop strings
  std::string text_;                // the released text
  int consumed_ = 0;                // token events taken from the stream
  bool done_ = false;
  bool stopped_by_string_ = false;
  bool event_driven_ = false;  // started with on_ready: poll(), never a blocking wait
  bool awaiting_end_ = false;  // cancelled after a stop string; the stream's end is still to come
  RequestSummary summary_;
  std::optional<ApiError> error_;
};

}  // namespace clm
