// A request body for the OpenAI-compatible routes on arbitrary bytes, taken
// as the server takes it (app/http_session.cpp, routes_generation.cpp): the
// shape check with the default limits, the JSON parse, then the fields of a
// chat and of a completion request.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "app/http_limits.h"
#include "app/json_shape.h"
#include "app/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const clm::HttpLimits limits;
  (void)clm::measure_json_shape(body, limits.max_json_depth, limits.max_json_elements);
  if (clm::check_json_shape(body, limits.max_json_depth, limits.max_json_elements)) return 0;
  const auto json = clm::parse_json_body(body);
  if (!json) return 0;
  clm::RequestDefaults defaults;
  defaults.model_id = "stories260K";
  defaults.n_vocab = 512;
  (void)clm::parse_chat_request(*json, defaults);
  (void)clm::parse_completion_request(*json, defaults);
  return 0;
}
