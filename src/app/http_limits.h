// The hard limits of the HTTP front: every one a `serve` flag, every breach
// a 4xx (or a closed connection for deadlines) in the OpenAI error shape.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace clm {

struct HttpLimits {
  std::size_t max_header_bytes = 16u << 10;  // request line + headers (431)
  int max_headers = 100;                     // header fields (431)
  std::size_t max_body_bytes = 8u << 20;     // however framed, chunked included (413)
  int max_json_depth = 64;                   // nesting of arrays and objects (400)
  std::size_t max_json_elements = 1u << 18;  // values in the document (400)
  // Text a request may bring to the tokenizer (400); 0: the most the context
  // could hold, n_ctx times the longest token's bytes (set at start).
  std::size_t max_prompt_bytes = 0;
  std::size_t max_logprob_entries = 1u << 18;  // chosen tokens plus alternatives a response may list (400)
  int max_connections = 1024;                // beyond: 503 at once, then closed
  double header_timeout_s = 10.0;            // the whole request head must arrive within this
  double body_timeout_s = 60.0;              // the whole body must arrive within this
  double keep_alive_timeout_s = 5.0;         // an idle kept-alive connection's next request head
  double write_timeout_s = 30.0;             // a client that takes no bytes for this long is dropped
  std::size_t max_stream_buffer_bytes = 1u << 20;  // a stream's output not yet taken; beyond: cancelled
  // Bytes of requests freed after which the server hands free heap pages back
  // to the kernel (malloc_trim); 0: never.
  std::size_t memory_trim_bytes = 1u << 20;
  int io_threads = 2;                        // event loop threads
  int handler_threads = 2;                   // threads that parse, tokenize and submit
  int render_threads = 2;                    // the same for chat requests, which render a template first
};

// Registers the flags for each limit on `serve`.
void add_http_limit_flags(CLI::App& cmd, HttpLimits& limits);

}  // namespace clm
