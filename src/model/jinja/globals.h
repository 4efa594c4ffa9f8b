// The names every template sees: namespace(...), range(...),
// raise_exception(message) and strftime_now(format).
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <string_view>

#include "model/jinja/render_limits.h"
#include "model/jinja/value.h"

namespace clm::jinja {

// `limits` must outlive the functions; strftime_now formats `now` in local time.
Dict make_globals(const RenderLimits& limits, std::chrono::system_clock::time_point now);

// strftime with English month and day names whatever the locale: %Y %y %m
// %d %H %I %M %S %p %b %B %a %A %j %%; other sequences stay as written.
std::string format_time(std::string_view format, const std::tm& t);

}  // namespace clm::jinja
