// StopStringFilter: watches generated text for stop strings. Text that might
// be the start of a stop string is held back until the next piece shows
// whether it is; a found stop string and everything after it are never
// released. The concatenation of what push() and flush() return is the text
// up to (not including) the first stop string, or all of it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace clm {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);

  // Appends generated text; returns the part that is now safe to send.
  // After a stop string is found, returns "" for every further call.
  std::string push(std::string_view text);
  // The generation ended without a stop string: releases what was held.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that matched; empty until stopped().
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_;
  bool stopped_ = false;
};

}  // namespace clm
