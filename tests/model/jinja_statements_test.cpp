// The template statements: text and output, whitespace control and the
// trim_blocks/lstrip_blocks rules chat templates are rendered with, comments,
// if/elif/else, for loops (loop.*, else, filters, unpacking, break,
// continue), set (plain, tuple, block, namespace attribute) and macros.
#include <gtest/gtest.h>

#include "jinja_render.h"

namespace clm {
namespace {

using test::render_jinja;

TEST(JinjaStatements, TextAndOutput) {
  EXPECT_EQ(render_jinja("plain text"), "plain text");
  EXPECT_EQ(render_jinja("a{{ 1 }}b{{ 'c' }}d"), "a1bcd");
  EXPECT_EQ(render_jinja("{{ x }}", R"({"x": "hi"})"), "hi");
  EXPECT_EQ(render_jinja(""), "");
}

TEST(JinjaStatements, OneFinalNewlineIsDropped) {
  EXPECT_EQ(render_jinja("a\n"), "a");
  EXPECT_EQ(render_jinja("a\n\n"), "a\n");
}

TEST(JinjaStatements, DashTrimsWhitespaceOnItsSide) {
  EXPECT_EQ(render_jinja("a  \n {{- 'b' -}} \n  c"), "abc");
  EXPECT_EQ(render_jinja("a  {{ 'b' -}}  c"), "a  bc");
  EXPECT_EQ(render_jinja("a  {{- 'b' }}  c"), "ab  c");
  EXPECT_EQ(render_jinja("a \t\n{%- if true -%}\n\n b{%- endif %}"), "ab");
  // Non-ASCII whitespace counts too (JavaScript's \s, as the reference).
  EXPECT_EQ(render_jinja("a\u00a0\u3000{{- 'b' }}"), "ab");
}

TEST(JinjaStatements, BlockTagsEatTheirLineAsChatTemplatesExpect) {
  // lstrip_blocks: indentation before {% goes; trim_blocks: the newline after %} goes.
  EXPECT_EQ(render_jinja("{% if true %}\n    yes\n  {% endif %}\nafter"), "    yes\nafter");
  EXPECT_EQ(render_jinja("  {# note #}\nx"), "x");
  // Expressions keep their line.
  EXPECT_EQ(render_jinja("  {{ 'x' }}\ny"), "  x\ny");
  EXPECT_EQ(render_jinja("{% for i in [1, 2] %}\n{{ i }}\n{% endfor %}\n"), "1\n2\n");
}

TEST(JinjaStatements, CommentsRenderNothing) {
  EXPECT_EQ(render_jinja("a{# a comment {{ not parsed }} #}b"), "ab");
  EXPECT_EQ(render_jinja("a  {#- trims -#}  b"), "ab");
  EXPECT_EQ(render_jinja("a{#\nmultiple\nlines\n#}b"), "ab");
}

TEST(JinjaStatements, GenerationMarkersAreRemoved) {
  EXPECT_EQ(render_jinja("a {% generation %}b{% endgeneration %} c"), "a b c");
  EXPECT_EQ(render_jinja("a {%- generation -%} b"), "ab");
}

TEST(JinjaStatements, IfElifElse) {
  const char* t = "{% if n == 1 %}one{% elif n == 2 %}two{% elif n > 2 %}many{% else %}none{% endif %}";
  EXPECT_EQ(render_jinja(t, R"({"n": 1})"), "one");
  EXPECT_EQ(render_jinja(t, R"({"n": 2})"), "two");
  EXPECT_EQ(render_jinja(t, R"({"n": 7})"), "many");
  EXPECT_EQ(render_jinja(t, R"({"n": 0})"), "none");
  EXPECT_EQ(render_jinja("{% if missing %}x{% else %}y{% endif %}"), "y");
  EXPECT_EQ(render_jinja("{% if a %}{% if b %}ab{% else %}a{% endif %}{% endif %}", R"({"a": 1, "b": 0})"), "a");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(render_jinja("{% for x in 'abc' | list %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                         "{{ loop.revindex0 }}{{ loop.length }}{% if loop.first %}F{% endif %}"
                         "{% if loop.last %}L{% endif %}{{ x }};{% endfor %}"),
            "10323Fa;21213b;32103Lc;");
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}|{% endfor %}"),
            "<1>2|1<2>3|2<3>|");
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3] %}{{ loop.cycle('odd', 'even') }} {% endfor %}"), "odd even odd ");
}

TEST(JinjaStatements, ForLoopsOverListsDictsStringsAndNothing) {
  EXPECT_EQ(render_jinja("{% for k in d %}{{ k }}={{ d[k] }} {% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
            "b=1 a=2 ");
  EXPECT_EQ(render_jinja("{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", R"({"d": {"x": 1, "y": 2}})"),
            "x1y2");
  EXPECT_EQ(render_jinja("{% for c in 'héllo' %}[{{ c }}]{% endfor %}"), "[h][é][l][l][o]");
  EXPECT_EQ(render_jinja("{% for x in missing %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render_jinja("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render_jinja("{% for x in [1] %}x{% else %}empty{% endfor %}"), "x");
  EXPECT_EQ(render_jinja("{% for x in messages[::-1] %}{{ x }}{% endfor %}", R"({"messages": [1, 2, 3]})"), "321");
}

TEST(JinjaStatements, ForLoopFilterUnpackBreakContinue) {
  EXPECT_EQ(render_jinja("{% for x in range(10) if x is odd %}{{ x }}{{ loop.length }} {% endfor %}"),
            "15 35 55 75 95 ");
  EXPECT_EQ(render_jinja("{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }} {% endfor %}"), "3 7 ");
  EXPECT_EQ(render_jinja("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                         "{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "0134");
  EXPECT_EQ(render_jinja("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
            "error: line 1, column 1: cannot unpack list of 3 items into 2 names");
}

TEST(JinjaStatements, NestedLoopsHaveTheirOwnLoopVariable) {
  EXPECT_EQ(render_jinja("{% for a in [1, 2] %}{% for b in 'xy' | list %}{{ loop.index }}{% endfor %}"
                         "{{ loop.index }};{% endfor %}"),
            "121;122;");
}

TEST(JinjaStatements, SetAndScopes) {
  EXPECT_EQ(render_jinja("{% set x = 1 %}{% set x = x + 1 %}{{ x }}"), "2");
  EXPECT_EQ(render_jinja("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render_jinja("{% set a, b = [3, 4] %}{{ a }}{{ b }}"), "34");
  EXPECT_EQ(render_jinja("{% set block %}A{{ 1 + 1 }}B{% endset %}[{{ block }}]"), "[A2B]");
  // A loop's assignments stay in the loop; an if's do not.
  EXPECT_EQ(render_jinja("{% set x = 0 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}"), "0");
  EXPECT_EQ(render_jinja("{% set x = 0 %}{% if true %}{% set x = 5 %}{% endif %}{{ x }}"), "5");
  // Context variables can be reassigned.
  EXPECT_EQ(render_jinja("{% set messages = messages[1:] %}{{ messages | length }}", R"({"messages": [1, 2, 3]})"),
            "2");
}

TEST(JinjaStatements, NamespacesCarryValuesOutOfLoops) {
  EXPECT_EQ(render_jinja("{% set ns = namespace(found=false, n=0) %}{% for x in [1, 5, 2] %}"
                         "{% if x > 3 %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + x %}{% endfor %}"
                         "{{ ns.found }} {{ ns.n }}"),
            "true 8");
  EXPECT_EQ(render_jinja("{% set ns = namespace() %}{% set ns.index = 3 %}{{ ns.index }}"), "3");
  EXPECT_EQ(render_jinja("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns.c }}"), "12");
  EXPECT_EQ(render_jinja("{% set d = {} %}{% set d.x = 1 %}"),
            "error: line 1, column 17: cannot set an attribute of dict (only of a namespace)");
  EXPECT_EQ(render_jinja("{% set ns = namespace() %}{% set ns.self = ns %}"),
            "error: line 1, column 27: a namespace cannot hold a namespace");
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(render_jinja("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                         "{{ greet('Ann') }} {{ greet('Bo', '?') }} {{ greet(punct='.', name='Cy') }}"),
            "Hi Ann! Hi Bo? Hi Cy.");
  // Output inside a macro goes to its result, not the page.
  EXPECT_EQ(render_jinja("{% macro m() %}inner{% endmacro %}{% set x = m() %}[{{ x | upper }}]"), "[INNER]");
  EXPECT_EQ(render_jinja("{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}"),
            "error: line 1, column 41: macro 'm' takes at most 1 argument, got 2");
  EXPECT_EQ(render_jinja("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}"),
            "error: line 1, column 34: macro 'm' has no parameter 'b'");
  EXPECT_EQ(render_jinja("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
            "321");
}

}  // namespace
}  // namespace clm
