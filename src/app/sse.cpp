#include "app/sse.h"

namespace clm {

std::string to_json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::json& data) { return "data: " + to_json_text(data) + "\n\n"; }

}  // namespace clm
