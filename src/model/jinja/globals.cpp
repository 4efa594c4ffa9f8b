#include "model/jinja/globals.h"

#include <array>
#include <cmath>
#include <ctime>
#include <string>

#include "model/jinja/arguments.h"
#include "model/jinja/template_error.h"

namespace clm::jinja {

namespace {

constexpr std::array<const char*, 12> kMonths = {"January", "February", "March",     "April",   "May",      "June",
                                                 "July",    "August",   "September", "October", "November", "December"};
constexpr std::array<const char*, 7> kDays = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};

std::string two_digits(int v) {
  std::string out(v < 10 ? 1 : 0, '0');
  out += std::to_string(v);
  return out;
}

Value make_namespace(const CallArgs& args) {
  if (args.positional.size() > 1) throw TemplateError("namespace() takes at most one positional argument");
  Dict entries;
  if (!args.positional.empty()) {
    const Value& from = args.positional[0];
    if (from.has_attributes()) {
      for (const auto& [k, v] : from.as_dict().entries()) entries.set(k, v);
    } else if (from.is_list()) {
      for (const Value& pair : from.as_list()) {
        if (!pair.is_list() || pair.as_list().size() != 2 || !pair.as_list()[0].is_string()) {
          throw TemplateError("namespace() needs a dict or a list of [name, value] pairs");
        }
        entries.set(pair.as_list()[0].as_string(), pair.as_list()[1]);
      }
    } else {
      throw TemplateError("namespace() needs a dict or a list of [name, value] pairs");
    }
  }
  for (const auto& [k, v] : args.keyword) entries.set(k, v);
  return Value::make_namespace(std::move(entries));
}

Value make_range(const CallArgs& args, const RenderLimits& limits) {
  if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3) {
    throw TemplateError("range() takes one to three integers");
  }
  for (const Value& v : args.positional) {
    if (!v.is(Value::Kind::Int)) throw TemplateError("range() takes integers, got " + std::string(kind_name(v)));
  }
  const bool one = args.positional.size() == 1;
  const int64_t start = one ? 0 : args.positional[0].as_int();
  const int64_t stop = one ? args.positional[0].as_int() : args.positional[1].as_int();
  const int64_t step = args.positional.size() == 3 ? args.positional[2].as_int() : 1;
  if (step == 0) throw TemplateError("range() step must not be zero");
  // The length first (in floating point, so that nothing overflows).
  const double span = (static_cast<double>(stop) - static_cast<double>(start)) / static_cast<double>(step);
  const double count = span <= 0 ? 0 : std::ceil(span);
  if (count > static_cast<double>(limits.max_loop_iterations)) {
    throw TemplateError("range() of " + std::to_string(static_cast<uint64_t>(count)) + " items exceeds the limit of " +
                        std::to_string(limits.max_loop_iterations) + " loop iterations");
  }
  ValueList items;
  items.reserve(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) items.push_back(Value::integer(start + i * step));
  return Value::list(std::move(items));
}

}  // namespace

std::string format_time(std::string_view format, const std::tm& t) {
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 == format.size()) {
      out += format[i];
      continue;
    }
    const char c = format[++i];
    const int hour12 = t.tm_hour % 12 == 0 ? 12 : t.tm_hour % 12;
    switch (c) {
      case 'Y': out += std::to_string(t.tm_year + 1900); break;
      case 'y': out += two_digits((t.tm_year + 1900) % 100); break;
      case 'm': out += two_digits(t.tm_mon + 1); break;
      case 'd': out += two_digits(t.tm_mday); break;
      case 'H': out += two_digits(t.tm_hour); break;
      case 'I': out += two_digits(hour12); break;
      case 'M': out += two_digits(t.tm_min); break;
      case 'S': out += two_digits(t.tm_sec); break;
      case 'p': out += t.tm_hour < 12 ? "AM" : "PM"; break;
      case 'B': out += kMonths[static_cast<std::size_t>(t.tm_mon) % 12]; break;
      case 'b': out += std::string(kMonths[static_cast<std::size_t>(t.tm_mon) % 12]).substr(0, 3); break;
      case 'A': out += kDays[static_cast<std::size_t>(t.tm_wday) % 7]; break;
      case 'a': out += std::string(kDays[static_cast<std::size_t>(t.tm_wday) % 7]).substr(0, 3); break;
      case 'j': {
        const std::string day = std::to_string(t.tm_yday + 1);
        out += std::string(3 - day.size(), '0') + day;
        break;
      }
      case '%': out += '%'; break;
      default:
        out += '%';
        out += c;
    }
  }
  return out;
}

Dict make_globals(const RenderLimits& limits, std::chrono::system_clock::time_point now) {
  Dict g;
  g.set("namespace", Value::function("namespace", make_namespace));
  g.set("range", Value::function("range", [&limits](const CallArgs& args) { return make_range(args, limits); }));
  g.set("raise_exception", Value::function("raise_exception", [](const CallArgs& args) -> Value {
          const std::string message = args.positional.empty() ? "" : display_string(args.positional[0]);
          throw TemplateError("the template raised an error: " + message);
        }));
  g.set("strftime_now", Value::function("strftime_now", [now](const CallArgs& args) {
          ArgumentReader in("strftime_now()", args, 1, {});
          const Value& format = in.required(0, "format");
          if (!format.is_string()) throw TemplateError("strftime_now() needs a format string");
          const std::time_t t = std::chrono::system_clock::to_time_t(now);
          std::tm local{};
          localtime_r(&t, &local);
          return Value::string(format_time(format.as_string(), local));
        }));
  return g;
}

}  // namespace clm::jinja
