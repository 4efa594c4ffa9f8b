#include "app/http_limits.h"

#include <CLI/CLI.hpp>

namespace clm {

void add_http_limit_flags(CLI::App& cmd, HttpLimits& l) {
  cmd.add_option("--max-header-bytes", l.max_header_bytes, "largest request line plus headers, in bytes (431 beyond)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 24));
  cmd.add_option("--max-headers", l.max_headers, "most header fields in a request (431 beyond)")
      ->check(CLI::Range(1, 10000));
  cmd.add_option("--max-body-bytes", l.max_body_bytes,
                 "largest request body accepted, in bytes, however it is framed (413 beyond)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  cmd.add_option("--max-json-depth", l.max_json_depth, "deepest nesting of arrays and objects in a body (400 beyond)")
      ->check(CLI::Range(2, 10000));
  cmd.add_option("--max-json-elements", l.max_json_elements, "most values in a JSON body (400 beyond)")
      ->check(CLI::Range(std::size_t{16}, std::size_t{1} << 30));
  cmd.add_option("--max-prompt-bytes", l.max_prompt_bytes,
                 "most bytes of prompt text taken to the tokenizer (400 beyond; 0: n_ctx times the longest token)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  cmd.add_option("--max-logprob-entries", l.max_logprob_entries,
                 "most logprob entries (tokens times 1 + top_logprobs) a response may carry (400 beyond)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  cmd.add_option("--max-connections", l.max_connections, "open connections; beyond, new ones get 503 and are closed")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--header-timeout", l.header_timeout_s, "seconds the whole request head may take to arrive")
      ->check(CLI::Range(0.1, 3600.0));
  cmd.add_option("--body-timeout", l.body_timeout_s, "seconds the whole request body may take to arrive")
      ->check(CLI::Range(0.1, 3600.0));
  cmd.add_option("--keep-alive-timeout", l.keep_alive_timeout_s,
                 "seconds an idle kept-alive connection waits for its next request")
      ->check(CLI::Range(0.1, 3600.0));
  cmd.add_option("--write-timeout", l.write_timeout_s, "seconds a client may take no bytes before it is dropped")
      ->check(CLI::Range(0.1, 3600.0));
  cmd.add_option("--max-stream-buffer-bytes", l.max_stream_buffer_bytes,
                 "a stream's output its client has not taken yet; beyond, the stream is cancelled")
      ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 30));
  cmd.add_option("--memory-trim-bytes", l.memory_trim_bytes,
                 "bytes of requests freed after which free heap pages go back to the system (0: never)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 40));
  cmd.add_option("--io-threads", l.io_threads, "HTTP event loop threads")->check(CLI::Range(1, 64));
  cmd.add_option("--handler-threads", l.handler_threads, "threads that parse, tokenize and submit requests")
      ->check(CLI::Range(1, 256));
  cmd.add_option("--render-threads", l.render_threads,
                 "threads that do the same for chat requests, which render the chat template first (a pool of "
                 "their own, so that a slow template never holds up /tokenize or completions)")
      ->check(CLI::Range(1, 256));
}

}  // namespace clm
