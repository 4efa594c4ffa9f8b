// The filters chat templates use, with and without arguments, and tojson's
// layout (Python's json.dumps separators, indent, ensure_ascii, sort_keys).
#include <gtest/gtest.h>

#include "jinja_render.h"

namespace clm {
namespace {

using test::render_jinja;

TEST(JinjaFilters, Strings) {
  EXPECT_EQ(render_jinja("[{{ '  a b \n' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ 'Hi' | upper }}][{{ 'Hi' | lower }}]"
                         "[{{ 'a b' | title }}][{{ 'ab' | capitalize }}]"),
            "[a b][a][HI][hi][A B][Ab]");
  EXPECT_EQ(render_jinja("{{ 'aXbX' | replace('X', '-') }} {{ 'aXbX' | replace('X', '-', 1) }} {{ 'héllo' | length }} "
                         "{{ 'abc' | reverse }} {{ 'abc' | first }}{{ 'abc' | last }} {{ 'abc' | join('.') }}"),
            "a-b- a-bX 5 cba ac a.b.c");
  EXPECT_EQ(render_jinja("{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}|{{ 'a\n\nb' | indent(1, blank=true) }}"),
            "a\n  b\n\n  c|  a\n  b|a\n \n b");
}

TEST(JinjaFilters, Lists) {
  const char* ctx = R"({"xs": [3, 1, 2, 1]})";
  EXPECT_EQ(render_jinja("{{ xs | length }} {{ xs | count }} {{ xs | first }} {{ xs | last }} {{ xs | reverse }} "
                         "{{ xs | sort }} {{ xs | sort(reverse=true) }} {{ xs | unique }} {{ xs | join(', ') }} "
                         "{{ xs | list }}",
                         ctx),
            "4 4 3 1 [1, 2, 1, 3] [1, 1, 2, 3] [3, 2, 1, 1] [3, 1, 2] 3, 1, 2, 1 [3, 1, 2, 1]");
  EXPECT_EQ(render_jinja("{{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} "
                         "[{{ [] | first }}]"),
            R"(["A", "b", "c"] ["A", "b", "c"] [])");
}

TEST(JinjaFilters, SelectMapAndAttributes) {
  const char* ctx = R"({"ms": [{"role": "system", "content": "s"}, {"role": "user", "content": "u1"},
                              {"role": "assistant"}, {"role": "user", "content": "u2"}]})";
  EXPECT_EQ(render_jinja("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}", ctx),
            "u1,u2");
  EXPECT_EQ(render_jinja("{{ ms | rejectattr('role', 'equalto', 'user') | list | length }} "
                         "{{ ms | selectattr('content') | list | length }} "
                         "{{ ms | map(attribute='content', default='-') | join }}",
                         ctx),
            "2 3 su1-u2");
  EXPECT_EQ(render_jinja("{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('even') | list }} "
                         "{{ ['a', 'code', 'b'] | reject('equalto', 'code') | join(', ') }} {{ [0, 1, '', 'x'] | select | list }} "
                         "{{ [' a ', 'b '] | map('trim') | list }}"),
            R"([1, 3] [1, 3] a, b [1, "x"] ["a", "b"])");
  EXPECT_EQ(render_jinja("{{ ms | sort(attribute='role') | map(attribute='role') | first }}", ctx), "assistant");
  // As in Python, none picks nothing (tools = none, then tools | selectattr(...)).
  EXPECT_EQ(render_jinja("{{ none | selectattr('type', 'equalto', 'x') | list | length }}{{ none | map('trim') | list }}"),
            "0[]");
}

TEST(JinjaFilters, DictsAndConversions) {
  const char* ctx = R"({"d": {"b": 1, "a": 2}})";
  EXPECT_EQ(render_jinja("{{ d | items }} {{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }} {{ d | length }}",
                         ctx),
            R"([["b", 1], ["a", 2]] [["a", 2], ["b", 1]] [["a", 2], ["b", 1]] 2)");
  EXPECT_EQ(render_jinja("{{ '42' | int + 1 }} {{ '12abc' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.7 | int }} "
                         "{{ '2.5' | float }} {{ 2 | float }} {{ -3 | abs }} {{ true | int }}"),
            "43 12 0 7 3 2.5 2.0 3 1");
  EXPECT_EQ(render_jinja("{{ 1 | string }}{{ none | string }}{{ [1] | string }}{{ 'x' | safe }}"), "1None[1]x");
  EXPECT_EQ(render_jinja("{{ x | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ 0 | d(5, true) }}"),
            "d  d 5");
}

TEST(JinjaFilters, ToJsonLaysOutAsPythonsJsonDumps) {
  const char* ctx =
      R"({"v": {"name": "f", "args": {"x": [1, 2.5, true, null], "s": "a\"b\\c\n\u0001é"}, "empty": [], "e": {}}})";
  EXPECT_EQ(render_jinja("{{ v | tojson }}", ctx),
            R"({"name": "f", "args": {"x": [1, 2.5, true, null], "s": "a\"b\\c\n\u0001é"}, "empty": [], "e": {}})");
  EXPECT_EQ(render_jinja("{{ v.args | tojson(indent=2) }}", ctx),
            "{\n  \"x\": [\n    1,\n    2.5,\n    true,\n    null\n  ],\n  \"s\": \"a\\\"b\\\\c\\n\\u0001é\"\n}");
  EXPECT_EQ(render_jinja("{{ 'é😀' | tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} "
                         "{{ [1, {'a': 2}] | tojson(separators=(',', ':')) }}"),
            R"("\u00e9\ud83d\ude00" {"a": 2, "b": 1} [1,{"a":2}])");
  EXPECT_EQ(render_jinja("{{ missing | tojson }} {{ 1.0 | tojson }} {{ 0.1 | tojson }} {{ big | tojson }} {{ big }}",
                         R"({"big": 1e21})"),
            "null 1 0.1 1e+21 1e+21");
}

TEST(JinjaFilters, UnknownFiltersAndBadOperandsAreErrors) {
  EXPECT_EQ(render_jinja("{{ 'x' | shout }}"), "error: line 1, column 10: unknown filter 'shout'");
  EXPECT_EQ(render_jinja("{{ 3 | trim }}"), "error: line 1, column 8: the filter 'trim' does not take integer");
  EXPECT_EQ(render_jinja("{{ 'x' | join(1) }}"), "error: line 1, column 10: join: 'd' must be a string, got integer");
}

}  // namespace
}  // namespace clm
