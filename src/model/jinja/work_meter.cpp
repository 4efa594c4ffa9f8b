#include "model/jinja/work_meter.h"

#include <string>

#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

thread_local WorkMeter* installed = nullptr;

// Reading the clock costs tens of nanoseconds: once per this many units.
constexpr uint64_t kClockEvery = 1 << 16;

}  // namespace

WorkMeter::WorkMeter(uint64_t max_work, std::size_t max_string_bytes, Clock::duration max_time)
    : max_work_(max_work), max_string_bytes_(max_string_bytes), deadline_(Clock::now() + max_time), previous_(installed) {
  installed = this;
}

WorkMeter::~WorkMeter() { installed = previous_; }

WorkMeter* WorkMeter::current() { return installed; }

void WorkMeter::charge(uint64_t units) {
  used_ += units;
  if (used_ > max_work_)
    throw TemplateError("the template did more than " + std::to_string(max_work_) + " units of work");
  if (used_ >= next_clock_check_) {
    next_clock_check_ = used_ + kClockEvery;
    check_deadline();
  }
}

void WorkMeter::check_deadline() {
  if (Clock::now() > deadline_) throw TemplateError("the template ran past its time limit");
}

void WorkMeter::check_string(std::size_t bytes) const {
  if (bytes > max_string_bytes_)
    throw TemplateError("a string exceeds the limit of " + std::to_string(max_string_bytes_) + " bytes");
}

}  // namespace clm::jinja
