#include "app/kv_type_flags.h"

#include <string>
#include <vector>

namespace clm {

namespace {

std::vector<std::string> type_names() {
  std::vector<std::string> names;
  for (int i = 0; i < kKvTypeCount; ++i) names.emplace_back(kv_type_name(static_cast<KvType>(i)));
  return names;
}

// CLI11 puts the flag's name before the message.
CLI::Validator kv_type_check() {
  return CLI::Validator(
      [](std::string& v) {
        if (parse_kv_type(v)) return std::string();
        std::string known;
        for (const std::string& n : type_names()) known += (known.empty() ? "" : ", ") + n;
        return "must be one of " + known + ", not '" + v + "'";
      },
      "TYPE");
}

CLI::Option* add_type_option(CLI::App& cmd, const std::string& flag, const std::string& help,
                             std::function<void(KvType)> set, KvType shown) {
  // The validator has run first, so the lookup cannot fail.
  return cmd
      .add_option_function<std::string>(
          flag, [set](const std::string& v) { set(parse_kv_type(v).value_or(KvType::F16)); }, help)
      ->check(kv_type_check())
      ->default_str(std::string(kv_type_name(shown)));
}

}  // namespace

void add_kv_type_flags(CLI::App& cmd, KvTypes& t) {
  auto* k = add_type_option(cmd, "--cache-type-k",
                            "K cache element type: f16, f32, q8_0 (int8 with one f16 scale per 32 values of a "
                            "head, or per head when head_dim is below 32), q4_0 (4-bit, grouped as q8_0; "
                            "head_dim must be even) or fp8 (E4M3 with one power-of-two scale per head)",
                            [&t](KvType x) { t.k = x; }, t.k);
  auto* v = add_type_option(cmd, "--cache-type-v", "V cache element type: f16, f32, q8_0, q4_0 or fp8 (as --cache-type-k)",
                            [&t](KvType x) { t.v = x; }, t.v);
  auto* both = add_type_option(cmd, "--kv-type", "shorthand for --cache-type-k T --cache-type-v T",
                               [&t](KvType x) { t = x; }, t.k);
  both->excludes(k)->excludes(v);
}

}  // namespace clm
