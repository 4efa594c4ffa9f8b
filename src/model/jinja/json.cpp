#include "model/jinja/json.h"

#include <algorithm>
#include <cmath>

#include "model/jinja/string_ops.h"
#include "model/jinja/template_error.h"
#include "model/jinja/work_meter.h"
#include "model/utf8.h"

namespace clm::jinja {

namespace {

void append_hex4(std::string& out, uint32_t unit) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
}

// JSON.stringify's escapes; with ensure_ascii every character from U+007F on
// becomes \uXXXX (UTF-16 units, so a pair above U+FFFF).
void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (std::size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if (b >= 0x80 && ensure_ascii) {
      const Utf8Char c = utf8_decode_at(s, pos);
      if (c.cp >= 0x10000) {
        const uint32_t v = c.cp - 0x10000;
        append_hex4(out, 0xD800 + (v >> 10));
        append_hex4(out, 0xDC00 + (v & 0x3FF));
      } else {
        append_hex4(out, c.cp);
      }
      pos += c.len;
      continue;
    }
    ++pos;
    switch (b) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (b < 0x20 || (b == 0x7F && ensure_ascii)) {
          append_hex4(out, b);
        } else {
          out += static_cast<char>(b);
        }
    }
  }
  out += '"';
}

class JsonWriter {
 public:
  JsonWriter(const JsonStyle& style, bool undefined_as_null) : style_(style), undefined_as_null_(undefined_as_null) {
    if (style.separators) {
      item_sep_ = style.separators->first;
      key_sep_ = style.separators->second;
    } else {
      item_sep_ = style.indent > 0 ? "," : ", ";
      key_sep_ = ": ";
    }
  }

  void write(std::string& out, const Value& v, int depth) const {
    using Kind = Value::Kind;
    // Bounded as it is built, not after: a value shared many times over is
    // written out as often as it is reached.
    charge_work(1);
    check_string_bytes(out.size());
    switch (v.kind()) {
      case Kind::Undefined: out += undefined_as_null_ ? "null" : "undefined"; return;
      case Kind::None: out += "null"; return;
      case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
      case Kind::Int: out += std::to_string(v.as_int()); return;
      case Kind::Float: {
        const double d = v.as_float();
        out += std::isfinite(d) ? js_number_to_string(d) : "null";
        return;
      }
      case Kind::String:
        charge_work(v.as_string().size());
        append_json_string(out, v.as_string(), style_.ensure_ascii);
        return;
      case Kind::List: write_list(out, v.as_list(), depth); return;
      case Kind::Dict:
      case Kind::Namespace: write_dict(out, v.as_dict(), depth); return;
      case Kind::Function: throw TemplateError("cannot convert the function '" + v.as_function().name + "' to JSON");
    }
  }

 private:
  std::string padding(int depth) const {
    std::string pad(1, '\n');
    pad.append(static_cast<std::size_t>(style_.indent) * static_cast<std::size_t>(depth), ' ');
    return pad;
  }

  void write_list(std::string& out, const ValueList& items, int depth) const {
    const bool pretty = style_.indent > 0 && !items.empty();
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += item_sep_;
      if (pretty) out += padding(depth + 1);
      write(out, items[i], depth + 1);
    }
    if (pretty) out += padding(depth);
    out += ']';
  }

  void write_dict(std::string& out, const Dict& dict, int depth) const {
    std::vector<const std::pair<std::string, Value>*> entries;
    for (const auto& e : dict.entries()) entries.push_back(&e);
    if (style_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
    }
    const bool pretty = style_.indent > 0 && !entries.empty();
    out += '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out += item_sep_;
      if (pretty) out += padding(depth + 1);
      append_json_string(out, entries[i]->first, style_.ensure_ascii);
      out += key_sep_;
      write(out, entries[i]->second, depth + 1);
    }
    if (pretty) out += padding(depth);
    out += '}';
  }

  const JsonStyle& style_;
  bool undefined_as_null_;
  std::string item_sep_;
  std::string key_sep_;
};

template <class Json>
Value from_json(const Json& j, int depth) {
  if (depth > kMaxNesting) {
    throw TemplateError("JSON nested more than " + std::to_string(kMaxNesting) + " levels deep");
  }
  switch (j.type()) {
    case Json::value_t::null: return Value::none();
    case Json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case Json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case Json::value_t::number_float: {
      const double d = j.template get<double>();
      constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
      if (d == std::trunc(d) && std::fabs(d) <= kExactIntegers) return Value::integer(static_cast<int64_t>(d));
      return Value::number(d);
    }
    case Json::value_t::string: return Value::string(j.template get<std::string>());
    case Json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(from_json(x, depth + 1));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.append(it.key(), from_json(it.value(), depth + 1));  // JSON keys are unique
      return Value::dict(std::move(d));
    }
    default: return Value();  // binary and discarded values do not occur in parsed JSON
  }
}

}  // namespace

Value value_from_json(const nlohmann::ordered_json& j) { return from_json(j, 0); }
Value value_from_json(const nlohmann::json& j) { return from_json(j, 0); }

std::string to_json(const Value& v, const JsonStyle& style, bool undefined_as_null) {
  std::string out;
  JsonWriter(style, undefined_as_null).write(out, v, 0);
  return out;
}

}  // namespace clm::jinja
