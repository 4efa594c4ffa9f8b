#include "engine/stop_reason.h"

namespace clm {

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::Stop: return "stop";
    case StopReason::Length: return "length";
    case StopReason::Cancelled: return "cancelled";
    case StopReason::Error: return "error";
  }
  return "unknown";
}

}  // namespace clm
