// A load progress bar on stderr that stays silent for loads under a second
// and when stderr is not a terminal.
#pragma once

#include <chrono>
#include <string>

namespace clm {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  void update(float fraction);

 private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  bool tty_ = false;
  bool drawn_ = false;
  int last_percent_ = -1;
};

}  // namespace clm
