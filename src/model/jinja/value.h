// The values a template computes with: undefined, none, booleans, integers,
// floats, strings, lists, dicts (insertion-ordered, string keys),
// namespaces (the one mutable kind) and functions. Strings, lists and dicts
// are immutable and shared, so copying a value is cheap.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace clm::jinja {

class Value;
using ValueList = std::vector<Value>;

class Dict;
struct CallArgs;

using NativeFunction = std::function<Value(const CallArgs&)>;

struct Callable {
  std::string name;
  NativeFunction call;
};

// Lists and dicts nest at most this deep, so that printing, comparing and
// freeing a value never recurses without bound.
inline constexpr int kMaxNesting = 100;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  // These throw TemplateError past kMaxNesting; a namespace holds no
  // namespace (so no namespace can come to contain itself).
  static Value list(ValueList items);
  static Value dict(Dict d);
  static Value make_namespace(Dict d);
  static Value function(std::string name, NativeFunction f);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is(Kind k) const { return kind() == k; }
  bool is_undefined() const { return is(Kind::Undefined); }
  bool is_none() const { return is(Kind::None); }
  bool is_string() const { return is(Kind::String); }
  bool is_list() const { return is(Kind::List); }
  // Integers and floats (not booleans).
  bool is_number() const { return is(Kind::Int) || is(Kind::Float); }
  // Dicts and namespaces: the values with attributes.
  bool has_attributes() const { return is(Kind::Dict) || is(Kind::Namespace); }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // Integers, floats and booleans as a double.
  double as_double() const;
  const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
  const ValueList& as_list() const { return *std::get<std::shared_ptr<const ValueList>>(v_); }
  // The entries of a dict or a namespace.
  const Dict& as_dict() const;
  Dict& namespace_entries() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  const Callable& as_function() const { return *std::get<std::shared_ptr<const Callable>>(v_); }

  // Python's truthiness: empty strings, lists and dicts, zero, none and
  // undefined are false.
  bool truthy() const;
  // Identity of a namespace or function (equal only if they are one).
  const void* identity() const;
  // Levels of lists and dicts inside (0 for a scalar).
  int nesting() const { return nesting_; }
  // Whether this is or contains a namespace.
  bool holds_namespace() const { return holds_namespace_; }

 private:
  // Raises nesting_ and holds_namespace_ to cover a child.
  void note_child(const Value& child);
  // Throws past kMaxNesting.
  void check_nesting() const;

  struct UndefinedTag {};
  struct NoneTag {};
  std::variant<UndefinedTag, NoneTag, bool, int64_t, double, std::shared_ptr<const std::string>, std::shared_ptr<const ValueList>,
               std::shared_ptr<const Dict>, std::shared_ptr<Dict>, std::shared_ptr<const Callable>>
      v_;
  int nesting_ = 0;
  bool holds_namespace_ = false;
};

// Insertion-ordered string-keyed map. Chat template dicts hold a handful of
// keys, so lookup is a scan.
class Dict {
 public:
  const Value* find(std::string_view key) const;
  // Replaces the value of an existing key in place, or appends.
  void set(std::string key, Value value);
  // Appends a key known not to be there yet (no scan).
  void append(std::string key, Value value) { entries_.emplace_back(std::move(key), std::move(value)); }
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, Value>> entries_;
};

// The arguments of a call: positional first, then name=value.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index`, else the keyword `name`, else nullptr.
  const Value* get(std::size_t index, std::string_view name) const;
};

std::string_view kind_name(Value::Kind kind);
inline std::string_view kind_name(const Value& v) { return kind_name(v.kind()); }

// ==: same kind and contents (numbers across int, float and bool);
// undefined equals none, as in Hugging Face's renderer.
bool values_equal(const Value& a, const Value& b);

// Python's `item in container`: a substring of a string, an element of a
// list, a key of a dict; nothing is in undefined. Throws TemplateError for
// other containers.
bool value_in(const Value& item, const Value& container);

// <0, 0, >0 for numbers and strings (strings by code point; case-folded to
// ASCII lower case unless case_sensitive); throws Error for other kinds.
int compare_values(const Value& a, const Value& b, bool case_sensitive = true);

// What {{ value }} writes: undefined and none write nothing, booleans
// "true"/"false", floats keep a decimal ("2.0"), lists and dicts as JSON.
std::string display_string(const Value& v);

}  // namespace clm::jinja
