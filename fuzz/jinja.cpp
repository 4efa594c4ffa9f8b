// A chat template (from a model file or --chat-template-file: untrusted) on
// arbitrary bytes: parsed, then rendered with the cost bounds on, over a
// small fixed conversation like the ones the server renders. The bounds are
// tighter than the defaults only so that each input runs quickly; a template
// that escapes them (runs past -timeout or -rss_limit_mb) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/jinja/template.h"

namespace {

const clm::jinja::Dict& conversation() {
  static const clm::jinja::Dict context = *clm::jinja::context_from_json(nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Name a prime."},
      {"role": "assistant", "content": "7", "tool_calls": [{"name": "f", "arguments": {"x": [1, 2.5, null, true]}}]},
      {"role": "user", "content": [{"type": "text", "text": "Another?"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>"
  })"));
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  const auto tmpl = clm::jinja::Template::parse(source);
  if (!tmpl) return 0;
  clm::jinja::RenderOptions options;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_loop_iterations = 100'000;
  options.limits.max_work = 20'000'000;
  options.now = std::chrono::system_clock::time_point{};  // strftime_now() the same on every run
  (void)tmpl->render(conversation(), options);
  return 0;
}
