// The work one rendering has done, charged by the interpreter for each node
// and each value it makes, and also by the operations that walk values
// (equality, `in`, `unique`, tojson, display): a list that holds itself
// twice, doubled 60 times, takes 60 steps to build and 2^60 to walk, so
// counting only what the interpreter makes would let it run without end.
// Rendering also has a wall-clock deadline, checked as work is charged.
//
// The meter of the rendering in progress is found through the thread (a
// rendering runs on one thread), so that the value operations, called from
// many filters and tests, need no extra argument; outside a rendering they
// charge nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace clm::jinja {

class WorkMeter {
 public:
  using Clock = std::chrono::steady_clock;
  WorkMeter(uint64_t max_work, std::size_t max_string_bytes, Clock::duration max_time);
  ~WorkMeter();  // uninstalls it from this thread
  WorkMeter(const WorkMeter&) = delete;
  WorkMeter& operator=(const WorkMeter&) = delete;

  // Throws TemplateError past the work bound or the deadline.
  void charge(uint64_t units);
  // Throws TemplateError when a string being built is past its bound.
  void check_string(std::size_t bytes) const;
  uint64_t used() const { return used_; }

  // The meter installed on this thread, or null.
  static WorkMeter* current();

 private:
  void check_deadline();

  uint64_t max_work_;
  std::size_t max_string_bytes_;
  Clock::time_point deadline_;
  uint64_t used_ = 0;
  uint64_t next_clock_check_ = 0;
  WorkMeter* previous_;  // a rendering inside a rendering (a macro's caller) restores it
};

// Charges the current rendering, if any.
inline void charge_work(uint64_t units) {
  if (WorkMeter* m = WorkMeter::current()) m->charge(units);
}
inline void check_string_bytes(std::size_t bytes) {
  if (const WorkMeter* m = WorkMeter::current()) m->check_string(bytes);
}

}  // namespace clm::jinja
