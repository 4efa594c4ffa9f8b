// Template expressions: literals, member and subscript access, slices,
// operators and their precedence, tests, filters with arguments, methods of
// strings and dicts, the globals, and how undefined values behave.
#include <gtest/gtest.h>

#include "jinja_render.h"

namespace clm {
namespace {

using test::render_jinja;

TEST(JinjaExpressions, Literals) {
  EXPECT_EQ(render_jinja("{{ 42 }} {{ -7 }} {{ 1.5 }} {{ 2.0 }} {{ 'it''s' }} {{ \"q\" }}"), "42 -7 1.5 2.0 its q");
  EXPECT_EQ(render_jinja(R"({{ 'a\nb\t\'\\' }}|{{ "\u00e9\x41" }})"), "a\nb\t'\\|éA");
  EXPECT_EQ(render_jinja("{{ true }} {{ True }} {{ false }} [{{ none }}] [{{ None }}]"), "true true false [] []");
  EXPECT_EQ(render_jinja("{{ [1, 'a', [2]] }} {{ (1, 2) }} {{ {'k': 'v', 'n': 1} }}"),
            R"([1, "a", [2]] [1, 2] {"k": "v", "n": 1})");
  EXPECT_EQ(render_jinja("{{ [] }}{{ {} }}{{ () }}"), "[]{}[]");
}

TEST(JinjaExpressions, MemberAndSubscriptAccess) {
  const char* ctx = R"({"m": {"role": "user", "content": "hi", "n": [10, 20, 30]}})";
  EXPECT_EQ(render_jinja("{{ m.role }} {{ m['content'] }} {{ m.n[1] }} {{ m.n[-1] }} {{ m.n.0 }}", ctx),
            "user hi 20 30 10");
  // Missing keys, indexes past the end and attributes of undefined are undefined.
  EXPECT_EQ(render_jinja("[{{ m.missing }}][{{ m.n[9] }}][{{ m.missing.deeper }}]", ctx), "[][][]");
  EXPECT_EQ(render_jinja("{{ 'héllo'[1] }}{{ 'abc'[-1] }}"), "éc");
  EXPECT_EQ(render_jinja("{{ m.n.length }} {{ 'héllo'.length }}", ctx), "3 5");
  EXPECT_EQ(render_jinja("{{ m[0] }}", ctx), "error: line 1, column 4: cannot index dict with an integer");
}

TEST(JinjaExpressions, Slices) {
  const char* ctx = R"({"xs": [0, 1, 2, 3, 4, 5]})";
  EXPECT_EQ(render_jinja("{{ xs[1:3] }}{{ xs[:2] }}{{ xs[4:] }}{{ xs[-2:] }}{{ xs[::2] }}{{ xs[::-1] }}", ctx),
            "[1, 2][0, 1][4, 5][4, 5][0, 2, 4][5, 4, 3, 2, 1, 0]");
  EXPECT_EQ(render_jinja("{{ xs[10:] }}{{ xs[-100:1] }}{{ xs[5:1:-2] }}", ctx), "[][0][5, 3]");
  EXPECT_EQ(render_jinja("{{ 'hello'[1:-1] }} {{ 'añb'[::-1] }} {{ '{\"a\": 1}'[:-1] }}"), "ell bña {\"a\": 1");
  EXPECT_EQ(render_jinja("{{ xs[::0] }}", ctx), "error: line 1, column 4: slice step cannot be zero");
}

TEST(JinjaExpressions, ArithmeticFollowsPython) {
  EXPECT_EQ(render_jinja("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ 7 % 3 }}"),
            "7 9 64 3.5 3 1");
  EXPECT_EQ(render_jinja("{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 1 + 1.5 }} {{ 4 / 2 }} {{ 2 ** -1 }}"),
            "-4 2 -2 2.5 2.0 0.5");
  EXPECT_EQ(render_jinja("{{ 'ab' * 3 }} {{ [0] * 2 }} {{ [1] + [2] }} {{ 'n=' + 5 }} {{ -(3) }} {{ +4 }}"),
            "ababab [0, 0] [1, 2] n=5 -3 4");
  EXPECT_EQ(render_jinja("{{ 1 / 0 }}"), "error: line 1, column 4: division by zero");
  EXPECT_EQ(render_jinja("{{ 9223372036854775807 + 1 }}"), "error: line 1, column 4: integer overflow");
  EXPECT_EQ(render_jinja("{{ [1] - 1 }}"), "error: line 1, column 4: cannot apply - to list and integer");
}

TEST(JinjaExpressions, ConcatenationWritesValues) {
  EXPECT_EQ(render_jinja("{{ 'a' ~ 1 ~ 2.5 ~ true ~ [1] }}"), "a12.5true[1]");
  // Undefined reads as nothing and none as "None", as in Python.
  EXPECT_EQ(render_jinja("{{ 'a' ~ missing ~ none }}"), "aNone");
}

TEST(JinjaExpressions, ComparisonsLogicAndMembership) {
  EXPECT_EQ(render_jinja("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ [1, 'a'] == [1, 'a'] }} "
                         "{{ {'a': 1} == {'a': 1} }} {{ 'x' != 'y' }}"),
            "true false true true true true true");
  EXPECT_EQ(render_jinja("{{ 1 and 'yes' }} {{ 0 or 'fallback' }} {{ '' and x }} {{ not 0 }} {{ not not 1 }}"),
            "yes fallback  true true");
  EXPECT_EQ(render_jinja("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} "
                         "{{ 'x' in missing }}"),
            "true true true true false");
  // not binds looser than comparisons; is and | tighter than arithmetic.
  EXPECT_EQ(render_jinja("{{ not 1 == 2 }} {{ not (1 == 1 and 2 == 3) }} {{ [1, 2] | length - 1 }}"), "true true 1");
  EXPECT_EQ(render_jinja("{{ 'x' + m.content | trim + 'y' }}", R"({"m": {"content": "  z  "}})"), "xzy");
  EXPECT_EQ(render_jinja("{{ missing < 1 }}"), "error: line 1, column 4: 'missing' is undefined");
}

TEST(JinjaExpressions, ConditionalExpressions) {
  EXPECT_EQ(render_jinja("{{ 'a' if x else 'b' }}{{ 'c' if not x else 'd' }}", R"({"x": true})"), "ad");
  EXPECT_EQ(render_jinja("[{{ 'shown' if x }}]", R"({"x": false})"), "[]");
  EXPECT_EQ(render_jinja("{{ 1 if a else 2 if b else 3 }}", R"({"a": false, "b": false})"), "3");
}

TEST(JinjaExpressions, Tests) {
  const char* ctx = R"({"s": "x", "n": 3, "f": 1.5, "l": [], "d": {}, "z": null, "t": true})";
  EXPECT_EQ(render_jinja("{{ s is defined }}{{ q is defined }}{{ q is undefined }}{{ z is none }}{{ s is not none }}",
                         ctx),
            "truefalsetruetruetrue");
  EXPECT_EQ(render_jinja("{{ s is string }}{{ n is number }}{{ f is float }}{{ n is integer }}{{ t is boolean }}"
                         "{{ t is true }}{{ t is false }}",
                         ctx),
            "truetruetruetruetruetruefalse");
  EXPECT_EQ(render_jinja("{{ d is mapping }}{{ l is iterable }}{{ s is iterable }}{{ d is iterable }}{{ l is sequence }}",
                         ctx),
            "truetruetruefalsetrue");
  EXPECT_EQ(render_jinja("{{ n is odd }}{{ n is even }}{{ n is divisibleby(3) }}{{ n is eq(3) }}{{ 'ab' is lower }}"
                         "{{ 'AB' is upper }}{{ n is gt(2) }}{{ 'a' is in('abc') }}{{ range is callable }}",
                         ctx),
            "truefalsetruetruetruetruetruetruetrue");
  EXPECT_EQ(render_jinja("{{ 1 is shiny }}"), "error: line 1, column 4: unknown test 'shiny'");
}

TEST(JinjaExpressions, StringMethods) {
  EXPECT_EQ(render_jinja("{{ ' a b '.strip() }}|{{ 'xxaxx'.strip('x') }}|{{ '\n\n a\n'.lstrip('\n') }}|"
                         "{{ 'a \n\n'.rstrip('\n') }}|{{ '  a  '.lstrip() }}|{{ '  a  '.rstrip() }}|"),
            "a b|a| a\n|a |a  |  a|");
  EXPECT_EQ(render_jinja("{{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello wORLD'.title() }} "
                         "{{ 'hello'.capitalize() }}"),
            "HELLO hello Hello WORLD Hello");
  EXPECT_EQ(render_jinja("{{ 'a</think>b'.split('</think>') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} "
                         "{{ 'a b c'.split(none, 1) }}"),
            R"(["a", "b"] ["a", "b"] ["a", "b,c"] ["a", "b c"])");
  EXPECT_EQ(render_jinja("{{ 'a</think>b'.split('</think>')[-1] }} {{ 'x<think>y'.split('<think>')[0] }}"), "b x");
  EXPECT_EQ(render_jinja("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.startswith('c') }}"),
            "true true false");
  EXPECT_EQ(render_jinja("{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }} "
                         "{{ '-'.join(['x', 'y']) }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }}"),
            "bbb bba -a-b- x-y 2 2");
  EXPECT_EQ(render_jinja("{{ 'a'.split('') }}"), "error: line 1, column 4: split(): empty separator");
}

TEST(JinjaExpressions, DictMethods) {
  const char* ctx = R"({"d": {"a": 1, "b": [2]}})";
  EXPECT_EQ(render_jinja("{{ d.get('a') }} {{ d.get('z', 'dflt') }} [{{ d.get('z') }}] {{ d.keys() }} "
                         "{{ d.values() }} {{ d.items() }}",
                         ctx),
            R"(1 dflt [] ["a", "b"] [1, [2]] [["a", 1], ["b", [2]]])");
}

TEST(JinjaExpressions, Globals) {
  EXPECT_EQ(render_jinja("{{ range(3) }} {{ range(1, 4) }} {{ range(5, 0, -2) }} {{ range(0) }}"),
            "[0, 1, 2] [1, 2, 3] [5, 3, 1] []");
  EXPECT_EQ(render_jinja("{{ raise_exception('Roles must alternate') }}"),
            "error: line 1, column 4: the template raised an error: Roles must alternate");
  jinja::RenderOptions options;
  options.now = std::chrono::system_clock::from_time_t(0) + std::chrono::hours(24 * 200);
  const std::string day = render_jinja("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%B %A %% %q') }}", "{}", options);
  // 20 July 1970, a Monday, in UTC; local time is at most a day off.
  EXPECT_NE(day.find("Jul 1970|July "), std::string::npos) << day;
  EXPECT_NE(day.find(" % %q"), std::string::npos) << day;
}

TEST(JinjaExpressions, UndefinedIsFalsyAndRendersEmpty) {
  EXPECT_EQ(render_jinja("[{{ missing }}]{% if not missing %}falsy{% endif %}{{ missing | default('d') }}"),
            "[]falsyd");
  EXPECT_EQ(render_jinja("{{ missing | length }}{{ missing | trim }}{{ missing | list }}"), "0[]");
  EXPECT_EQ(render_jinja("{{ missing + 1 }}"), "error: line 1, column 4: 'missing' is undefined");
  EXPECT_EQ(render_jinja("{{ m.content + 'x' }}", R"({"m": {}})"),
            "error: line 1, column 4: the attribute 'content' is undefined");
  EXPECT_EQ(render_jinja("{{ nothing() }}"), "error: line 1, column 4: 'nothing' is not defined (called as a function)");
}

}  // namespace
}  // namespace clm
