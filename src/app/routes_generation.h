// POST /v1/completions and POST /v1/chat/completions, answered whole or
// streamed as server-sent events. A GenerationReply turns a running
// generation into response bytes without ever waiting for a token: the
// connection calls it when the scheduler says tokens are ready.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/generation_job.h"
#include "app/http_message.h"
#include "app/server_context.h"

namespace clm {

class RouteTable;

class GenerationReply {
 public:
  explicit GenerationReply(std::unique_ptr<GenerationJob> job);
  bool streamed() const { return job_->request().stream; }
  // Streamed: appends the events ready now to `out`; true once the stream's
  // last event ("data: [DONE]") is among them.
  bool pump_events(std::string& out);
  // Whole: the response once the generation has ended; nullopt before.
  std::optional<HttpResponse> pump_whole();

 private:
  std::unique_ptr<GenerationJob> job_;  // destroyed with the reply: a generation still running is cancelled
  bool sent_first_ = false;
  std::vector<TokenLogprob> generated_;  // whole answers: logprobs gathered so far
};

void register_generation_routes(RouteTable& routes, ServerContext& ctx);

}  // namespace clm
