#include "app/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace clm {

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), start_(std::chrono::steady_clock::now()), tty_(::isatty(STDERR_FILENO) != 0) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputs("\n", stderr);
}

void ProgressBar::update(float fraction) {
  if (!tty_) return;
  if (std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
  const int percent = static_cast<int>(std::clamp(fraction, 0.0f, 1.0f) * 100.0f);
  if (percent == last_percent_) return;
  last_percent_ = percent;
  constexpr int kWidth = 40;
  const int filled = percent * kWidth / 100;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "\r%s [%s] %3d%%", label_.c_str(), bar.c_str(), percent);
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace clm
