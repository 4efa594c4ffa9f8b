#include "app/stop_strings.h"

#include <algorithm>

namespace clm {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopStringFilter::push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  // The earliest match wins; at equal positions the longest stop string.
  std::size_t best = std::string::npos;
  for (const auto& stop : stops_) {
    const std::size_t at = held_.find(stop);
    if (at != std::string::npos && (at < best || (at == best && stop.size() > matched_.size()))) {
      best = at;
      matched_ = stop;
    }
  }
  if (best != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold back the longest tail of the text that is a proper prefix of a stop
  // string: the next piece may complete it.
  std::size_t keep = 0;
  for (const auto& stop : stops_) {
    const std::size_t most = std::min(stop.size() - 1, held_.size());
    for (std::size_t n = most; n > keep; --n) {
      if (std::string_view(held_).substr(held_.size() - n) == std::string_view(stop).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStringFilter::flush() {
  if (stopped_) return {};
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace clm
