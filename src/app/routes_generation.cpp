#include "app/routes_generation.h"

#include <memory>

#include "app/generation_job.h"
#include "app/http_reply.h"
#include "app/openai_response.h"
#include "app/sse.h"

namespace clm {

namespace {

void reply_whole(httplib::Response& res, GenerationJob& job) {
  std::vector<TokenLogprob> generated;
  while (!job.done()) {
    GenerationJob::Step step = job.next();
    for (auto& lp : step.logprobs) generated.push_back(std::move(lp));
  }
  if (job.error()) return reply_error(res, *job.error());
  // With echo, the prompt comes first in the text and in the logprobs.
  std::vector<TokenLogprob> logprobs = job.request().echo ? job.prompt_logprobs() : std::vector<TokenLogprob>{};
  for (auto& lp : generated) logprobs.push_back(std::move(lp));
  const std::optional<FinishDetails> details = job.finish_details();
  reply_json(res, completion_response(job.meta(), job.echo_text() + job.text(), job.finish_reason(), job.usage(),
                                      job.request().logprobs ? &logprobs : nullptr, details ? &*details : nullptr));
}

// Streams one event per token that releases text (or carries logprobs).
// Returning false from the provider makes httplib drop the connection; the
// job is then destroyed with the response, which cancels the generation.
void reply_streamed(httplib::Response& res, std::shared_ptr<GenerationJob> job) {
  res.set_header("Cache-Control", "no-cache");
  auto sent_first = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, sent_first](std::size_t, httplib::DataSink& sink) {
        const ResponseMeta& meta = job->meta();
        const bool with_logprobs = job->request().logprobs;
        if (!*sent_first) {
          *sent_first = true;
          // Chat streams open with the role; completions start with text.
          if (meta.endpoint == ApiEndpoint::Chat) {
            StreamChunk first;
            first.first = true;
            const std::string event = sse_event(stream_chunk(meta, first));
            return sink.write(event.data(), event.size());
          }
        }
        if (!job->done()) {
          GenerationJob::Step step = job->next();
          if (!step.text.empty() || (with_logprobs && !step.logprobs.empty())) {
            StreamChunk chunk;
            chunk.text = step.text;
            chunk.text_offset = step.text_offset;
            if (with_logprobs) chunk.logprobs = &step.logprobs;
            const std::string event = sse_event(stream_chunk(meta, chunk));
            if (!sink.write(event.data(), event.size())) return false;
          } else if (!sink.is_writable()) {
            return false;
          }
          if (!job->done()) return true;
        }
        std::string tail;
        if (job->error()) {
          tail += sse_event(job->error()->to_json());
        } else {
          StreamChunk last;
          last.finish_reason = job->finish_reason();
          last.finish_details = job->finish_details();
          tail += sse_event(stream_chunk(meta, last));
          if (job->request().include_usage) tail += sse_event(usage_chunk(meta, job->usage()));
        }
        tail += sse_done();
        if (!sink.write(tail.data(), tail.size())) return false;
        sink.done();
        return true;
      });
}

void handle(const httplib::Request& req, httplib::Response& res, ServerContext& ctx, ApiEndpoint endpoint) {
  auto body = parse_json_body(req.body);
  if (!body) return reply_error(res, body.error());
  auto request = endpoint == ApiEndpoint::Chat ? parse_chat_request(*body, ctx.options.defaults)
                                               : parse_completion_request(*body, ctx.options.defaults);
  if (!request) return reply_error(res, request.error());
  const bool stream = request->stream;
  auto job = GenerationJob::start(ctx, std::move(*request));
  if (!job) return reply_error(res, job.error());
  if (stream) return reply_streamed(res, std::shared_ptr<GenerationJob>(std::move(*job)));
  reply_whole(res, **job);
}

}  // namespace

void register_generation_routes(httplib::Server& server, ServerContext& ctx) {
  server.Post("/v1/chat/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle(req, res, ctx, ApiEndpoint::Chat);
  });
  server.Post("/v1/completions", [&ctx](const httplib::Request& req, httplib::Response& res) {
    handle(req, res, ctx, ApiEndpoint::Completion);
  });
}

}  // namespace clm
