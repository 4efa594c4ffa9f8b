// Bad templates fail with a message that names the line and column; no
// template can loop, recurse, nest or grow without bound: each limit is an
// error, never a hang or a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "jinja_render.h"

namespace clm {
namespace {

using test::render_jinja;

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(render_jinja("line one\n{% if x %}\nno end"), "error: line 2, column 4: 'if' is not closed");
  EXPECT_EQ(render_jinja("{% for x in y %}{% endif %}"), "error: line 1, column 20: unexpected 'endif' in 'for'");
  EXPECT_EQ(render_jinja("ok\n\n  {{ 1 + }}"), "error: line 3, column 10: expected an expression, got '}}'");
  EXPECT_EQ(render_jinja("{{ 'unclosed }}"), "error: line 1, column 4: string not closed");
  EXPECT_EQ(render_jinja("{# never closed"), "error: line 1, column 1: comment not closed with '#}'");
  EXPECT_EQ(render_jinja("{% include 'x' %}"), "error: line 1, column 4: unsupported statement 'include'");
  EXPECT_EQ(render_jinja("{% endfor %}"), "error: line 1, column 4: unexpected 'endfor'");
  EXPECT_EQ(render_jinja("{{ a ! b }}"), "error: line 1, column 6: unexpected character '!'");
  EXPECT_EQ(render_jinja("{{ 'a\\q' }}"), "error: line 1, column 6: unknown escape '\\q'");
  EXPECT_EQ(render_jinja("{% break %}"), "error: line 1, column 4: 'break' outside a loop");
  EXPECT_EQ(render_jinja("{{ 99999999999999999999 }}"), "error: line 1, column 4: the number 99999999999999999999 is too large");
  EXPECT_EQ(render_jinja("{{ x | }}"), "error: line 1, column 8: expected a filter name, got '}}'");
  EXPECT_EQ(render_jinja("{{ f(a=1, 2) }}"),
            "error: line 1, column 11: expected a keyword argument (name=value) after keyword arguments, got the number 2");
}

TEST(JinjaErrors, ColumnsCountCharactersAndSurviveTheWhitespaceRules) {
  // The stripped indentation and dropped newlines do not shift positions.
  EXPECT_EQ(render_jinja("{% if true %}\n    {% if %}"), "error: line 2, column 11: expected an expression, got '%}'");
  EXPECT_EQ(render_jinja("é\n  ü {{ missing + 1 }}"), "error: line 2, column 8: 'missing' is undefined");
}

TEST(JinjaErrors, RuntimeErrorsPointAtTheirExpression) {
  const std::string tmpl =
      "{%- for message in messages %}\n"
      "    {%- if message.role == 'system' %}\n"
      "        {{- raise_exception('System role not supported') }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n";
  EXPECT_EQ(render_jinja(tmpl, R"({"messages": [{"role": "system"}]})"),
            "error: line 3, column 13: the template raised an error: System role not supported");
  EXPECT_EQ(render_jinja("\n\n{{ 'a' | nope }}"), "error: line 3, column 10: unknown filter 'nope'");
}

TEST(JinjaErrors, LoopIterationsAreBounded) {
  jinja::RenderOptions options;
  options.limits.max_loop_iterations = 1000;
  EXPECT_EQ(render_jinja("{% for i in range(1001) %}{% endfor %}", "{}", options),
            "error: line 1, column 13: range() of 1001 items exceeds the limit of 1000 loop iterations");
  EXPECT_EQ(render_jinja("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "{}", options),
            "error: line 1, column 26: loops ran more than 1000 iterations");
  // The default limit stops a loop of a billion.
  EXPECT_NE(render_jinja("{% for i in range(1000000000) %}x{% endfor %}").find("exceeds the limit"), std::string::npos);
}

TEST(JinjaErrors, RecursionIsBounded) {
  EXPECT_EQ(render_jinja("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "error: line 1, column 20: macro calls nested more than 64 deep");
}

TEST(JinjaErrors, DeepNestingIsAnErrorNotACrash) {
  const int depth = 5000;
  EXPECT_NE(render_jinja("{{ " + std::string(depth, '(') + "1" + std::string(depth, ')') + " }}").find("nested more than"),
            std::string::npos);
  EXPECT_NE(render_jinja("{{ " + std::string(depth, '[') + std::string(depth, ']') + " }}").find("nested more than"),
            std::string::npos);
  std::string ifs;
  for (int i = 0; i < depth; ++i) ifs += "{% if true %}";
  EXPECT_NE(render_jinja(ifs).find("nested more than"), std::string::npos);
  EXPECT_NE(render_jinja("{{ " + std::string(depth, '-') + "1 }}").find("nested more than"), std::string::npos);
  EXPECT_NE(render_jinja("{{ " + [&] {
              std::string s;
              for (int i = 0; i < depth; ++i) s += "not ";
              return s;
            }() + "1 }}").find("nested more than"),
            std::string::npos);
  // Values built up in a loop cannot nest without bound either.
  EXPECT_NE(render_jinja("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nested more than 100 levels"),
            std::string::npos);
}

TEST(JinjaErrors, OutputAndWorkAreBounded) {
  jinja::RenderOptions options;
  options.limits.max_output_bytes = 1000;
  EXPECT_EQ(render_jinja("{% for i in range(200) %}abcdefgh{% endfor %}", "{}", options),
            "error: line 1, column 26: the output exceeds the limit of 1000 bytes");
  EXPECT_EQ(render_jinja("{{ 'x' * 2000 }}", "{}", options),
            "error: line 1, column 4: a repeated string exceeds the output limit");
  // Doubling a string in a loop stops at the limit, long before memory runs out.
  EXPECT_NE(render_jinja("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}"
                         "{% endfor %}",
                         "{}", options)
                .find("a string exceeds the limit of 1000 bytes"),
            std::string::npos);
  // Quadratic copying within the byte limit is stopped by the work budget.
  jinja::RenderOptions work;
  work.limits.max_work = 1'000'000;
  EXPECT_NE(render_jinja("{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'ab' %}"
                         "{% endfor %}",
                         "{}", work)
                .find("units of work"),
            std::string::npos);
}

// A list that holds itself twice, doubled 60 times, is 60 steps to build
// and 2^60 to walk: whatever walks it (equality, `in`, `unique`, tojson,
// writing it out) is charged for each element, and stops at the budget or
// the deadline.
TEST(JinjaErrors, WalkingASharedValueIsChargedAsWork) {
  const std::string doubled =
      "{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}";
  jinja::RenderOptions work;
  work.limits.max_work = 10'000'000;
  work.limits.max_seconds = 600;  // the work bound is what stops it here, however slow the build
  for (const char* walk : {"{{ ns.a == ns.a }}", "{{ ns.a in [0, ns.a] }}", "{{ [ns.a, ns.a] | unique | length }}",
                           "{{ ns.a | tojson }}", "{{ ns.a }}", "{% if ns.a is eq(ns.a) %}{% endif %}"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = render_jinja(doubled + walk, "{}", work);
    EXPECT_NE(out.find("units of work"), std::string::npos) << walk << ": " << out.substr(0, 200);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0) << walk;
  }
  // With work to spare, the clock stops it.
  jinja::RenderOptions clock;
  clock.limits.max_seconds = 0.2;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string out = render_jinja(doubled + "{{ ns.a == ns.a }}", "{}", clock);
  EXPECT_NE(out.find("ran past its time limit"), std::string::npos) << out.substr(0, 200);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// Templates glued together at random from pieces of the language: each
// renders or fails with a message that names its position, never anything
// else (run under the sanitizers this is where a crash would show).
TEST(JinjaErrors, RandomPiecesRenderOrFailWithAPosition) {
  const std::vector<std::string> pieces = {
      "{{", "}}", "{%", "%}", "{#", "#}", "{{-", "-}}", "{%-", "-%}", " ", "\n", "if", "elif", "else", "endif",
      "for", "in", "endfor", "set", "endset", "macro", "endmacro", "break", "continue", "x", "ns", "messages", "m",
      "loop", "namespace(a=1)", "range(3)", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", "=", "==", "<", "+", "-",
      "*", "//", "%", "**", "~", "not", "and", "or", "is", "defined", "none", "true", "1", "-1", "2.5", "'a'", "'\\n'",
      "trim", "tojson", "length", "join", "split", "strip", "items", "selectattr", "map", "default",
      "raise_exception", "content", "[::-1]", "[1:]", "é", "\\", "'", "\"", "!", "m.content", "loop.index0"};
  std::mt19937 rng(7);
  jinja::RenderOptions options;
  options.limits.max_work = 1'000'000;
  int rendered = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string source;
    for (int n = 1 + static_cast<int>(rng() % 24); n > 0; --n) source += pieces[rng() % pieces.size()];
    const std::string out = render_jinja(
        source, R"({"messages": [{"role": "user", "content": "hi"}], "x": [1, 2], "m": {"content": "c"}})", options);
    if (!out.starts_with("error: ")) {
      ++rendered;
    } else {
      EXPECT_TRUE(out.starts_with("error: line ")) << source << " -> " << out;
    }
  }
  EXPECT_GT(rendered, 300);  // the pieces do make working templates too
}

TEST(JinjaErrors, BadContextsAreErrors) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  EXPECT_EQ(render_jinja("{{ x }}", R"({"x": )" + deep + "}"), "error: JSON nested more than 100 levels deep");
}

}  // namespace
}  // namespace clm
