#include "engine/end_cause.h"

namespace clm {

std::string_view to_string(CancelCause cause) {
  switch (cause) {
    case CancelCause::Client: return "client_gone";
    case CancelCause::StopString: return "stop_string";
    case CancelCause::Shutdown: return "shutdown";
    case CancelCause::Deadline: return "deadline";
  }
  return "unknown";
}

std::string_view to_string(PreemptCause cause) {
  switch (cause) {
    case PreemptCause::KvCacheFull: return "kv_cache_full";
  }
  return "unknown";
}

}  // namespace clm
