// The K/V type flags through the real executable: every command that builds
// a KV cache takes them; a bad value, a contradiction or a type the model's
// heads cannot take is an error naming the flag; the disk tier never hands
// one type's entries to another; `serve`'s /stats shows the smaller q8_0,
// fp8 and q4_0 blocks as more tokens in the same --kv-memory-mb; `info` gives
// the memory of the types the model's heads can take.
#include <gtest/gtest.h>

#include <httplib.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/server_process.h"
#include "support/story_prompt.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::run_command;
using test::shell_quote;

std::string cli() { return shell_quote(test::cli_binary()); }
std::string real_model() { return shell_quote(test::shared_file("models/stories260K.gguf")); }

const char* const kPrompt = test::kStoryPrompt;

TEST(CliKvType, EveryKvCommandTakesTheFlags) {
  for (const char* command : {"run", "chat", "serve", "bench model", "eval reuse", "eval evict", "eval kv-type"}) {
    const auto help = run_command(cli() + " " + command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    for (const char* flag : {"--cache-type-k", "--cache-type-v", "--kv-type"})
      EXPECT_NE(help.out.find(flag), std::string::npos) << command << " " << flag;
  }
}

TEST(CliKvType, BadValuesAndContradictionsAreErrorsNamingTheFlag) {
  struct Bad {
    std::string args;
    std::string flag;
    std::string why;
  };
  const std::vector<Bad> bad = {
      {"run -m " + real_model() + " -n 1 -p Once --cache-type-k q4_1", "--cache-type-k", "q8_0"},
      {"run -m " + real_model() + " -n 1 -p Once --cache-type-k q4", "--cache-type-k", "q4_0"},
      {"run -m " + real_model() + " -n 1 -p Once --cache-type-v F16", "--cache-type-v", "f16"},
      {"run -m " + real_model() + " -n 1 -p Once --kv-type f16 --cache-type-v q8_0", "--kv-type", "excludes"},
      {"serve -m " + real_model() + " --port 0 --cache-type-k e5m2", "--cache-type-k", "q8_0"},
      {"bench model -m " + real_model() + " --cache-type-v int8", "--cache-type-v", "q8_0"},
      {"eval kv-type --cases x.json -m " + real_model() + " --cache-type-k nope", "--cache-type-k", "q8_0"},
  };
  for (const Bad& b : bad) {
    const auto r = run_command(cli() + " " + b.args + " < /dev/null");
    EXPECT_NE(r.exit_code, 0) << b.args;
    EXPECT_NE(r.err.find(b.flag), std::string::npos) << b.args << ": " << r.err;
    EXPECT_NE(r.err.find(b.why), std::string::npos) << b.args << ": " << r.err;
  }
}

// head_dim 40: above one group and not a multiple of 32, for q8_0 and q4_0
// alike; fp8, one scale a row, takes it. `info` leaves out the types the
// heads cannot take.
TEST(CliKvType, AHeadQ8CannotStoreIsAnErrorNamingTheFlag) {
  const std::string model = test::temp_dir() + "/hd40.gguf";
  const auto made = run_command(cli() + " make-model --preset tiny --embd 80 --heads 2 --kv-heads 2 --head-dim 40 -o " +
                                shell_quote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  for (const std::string type : {"q8_0", "q4_0"})
    for (const char* flag : {"--cache-type-k", "--cache-type-v"}) {
      const auto r = run_command(cli() + " run -n 1 -p Once -m " + shell_quote(model) + " " + flag + " " + type);
      EXPECT_NE(r.exit_code, 0) << flag;
      EXPECT_NE(r.err.find(std::string(flag) + " " + type), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("head_dim 40"), std::string::npos) << r.err;
    }
  for (const char* type : {"f16", "fp8"}) {
    const auto r = run_command(cli() + " run -n 1 -p Once -m " + shell_quote(model) + " --kv-type " + type);
    EXPECT_EQ(r.exit_code, 0) << type << ": " << r.err;
  }
  const auto info = run_command(cli() + " info " + shell_quote(model));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out.find(" at q8_0"), std::string::npos) << info.out;
  EXPECT_EQ(info.out.find(" at q4_0"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(" at fp8"), std::string::npos) << info.out;
}

json run_with(const std::string& dir, const std::string& types) {
  const auto r = run_command(cli() + " run --json --temp 0 -n 8 --block-size 16 -m " + real_model() +
                             " --disk-cache " + shell_quote(dir) + " --min-free-space-gb 0 " + types + " -p " +
                             shell_quote(kPrompt));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json{};
}

// One disk cache, processes with different K/V types: each type hits only
// what a process of its own types wrote, and a hit generates what its cold
// run generated.
TEST(CliKvType, DiskEntriesOfOneKvTypeAreAMissForAnother) {
  const std::string dir = test::temp_dir() + "/cache";
  const json q8_cold = run_with(dir, "--kv-type q8_0");
  ASSERT_FALSE(q8_cold.is_null());
  EXPECT_EQ(q8_cold["cached_tokens"], 0);
  const int n = static_cast<int>(q8_cold["prompt_token_ids"].size());
  ASSERT_GT(n, 32);
  const int reusable = n % 16 == 0 ? n - 1 : n / 16 * 16;

  for (const char* other : {"--kv-type f16", "--kv-type f32", "--cache-type-k q8_0 --cache-type-v f16",
                            "--cache-type-k f16 --cache-type-v q8_0", "--cache-type-k q8_0 --cache-type-v q4_0",
                            "--kv-type fp8"}) {
    const json miss = run_with(dir, other);
    ASSERT_FALSE(miss.is_null()) << other;
    EXPECT_EQ(miss["cached_tokens"], 0) << other << " used entries q8_0 wrote";
  }
  const json q8_hit = run_with(dir, "--cache-type-k q8_0 --cache-type-v q8_0");
  ASSERT_FALSE(q8_hit.is_null());
  EXPECT_EQ(q8_hit["cached_tokens"].get<int>(), reusable);
  EXPECT_EQ(q8_hit["token_ids"], q8_cold["token_ids"]);
  const json mixed_hit = run_with(dir, "--cache-type-k q8_0 --cache-type-v f16");
  ASSERT_FALSE(mixed_hit.is_null());
  EXPECT_EQ(mixed_hit["cached_tokens"].get<int>(), reusable) << "the mixed run's own entries";
}

json stats_of(const std::vector<std::string>& args) {
  test::ServerProcess server(args);
  if (server.port() == 0) return json{};
  httplib::Client c("127.0.0.1", server.port());
  auto res = c.Get("/stats");
  EXPECT_TRUE(res && res->status == 200);
  return res ? json::parse(res->body, nullptr, false) : json{};
}

// A model with heads of 64 (two q8_0 groups each): the same 2 MiB pool holds
// at least 1.85x the tokens in q8_0 and in fp8 (68 and 65 bytes a row against
// 128), and /stats says which types it holds.
TEST(CliKvType, StatsShowTheQ8AndFp8PoolsHoldingMoreTokens) {
  const std::string model = test::temp_dir() + "/hd64.gguf";
  const auto made = run_command(cli() + " make-model --preset tiny --embd 128 --heads 2 --kv-heads 2 -o " +
                                shell_quote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const json f16 = stats_of({"-m", model, "--kv-memory-mb", "2", "--block-size", "16"});
  ASSERT_TRUE(f16.contains("cache")) << f16.dump();
  EXPECT_EQ(f16["cache"]["cache_type_k"], "f16");
  const double f16_tokens = f16["cache"]["capacity_tokens"].get<double>();
  EXPECT_GT(f16_tokens, 0);
  EXPECT_EQ(f16["cache"]["capacity_tokens"], f16["cache"]["blocks_total"].get<int>() * 16);
  for (const std::string type : {"q8_0", "fp8"}) {
    const json q = stats_of({"-m", model, "--kv-memory-mb", "2", "--block-size", "16", "--kv-type", type});
    ASSERT_TRUE(q.contains("cache")) << q.dump();
    EXPECT_EQ(q["cache"]["cache_type_k"], type);
    EXPECT_EQ(q["cache"]["cache_type_v"], type);
    const double q_tokens = q["cache"]["capacity_tokens"].get<double>();
    EXPECT_GE(q_tokens / f16_tokens, 1.85) << type << ": " << f16_tokens << " " << q_tokens;
    EXPECT_LT(q["cache"]["block_bytes"].get<double>(), f16["cache"]["block_bytes"].get<double>() / 1.85) << type;
  }
}

// The same model and pool in q4_0 (36 bytes a row against f16's 128): at
// least 3.4x the tokens; K in q8_0 with V in q4_0 lies between. `info` gives
// the per-context memory of both quantized types.
TEST(CliKvType, StatsShowTheQ4PoolHoldingMoreTokens) {
  const std::string model = test::temp_dir() + "/hd64.gguf";
  const auto made = run_command(cli() + " make-model --preset tiny --embd 128 --heads 2 --kv-heads 2 -o " +
                                shell_quote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const json f16 = stats_of({"-m", model, "--kv-memory-mb", "2", "--block-size", "16"});
  const json q4 = stats_of({"-m", model, "--kv-memory-mb", "2", "--block-size", "16", "--kv-type", "q4_0"});
  const json mixed = stats_of({"-m", model, "--kv-memory-mb", "2", "--block-size", "16", "--cache-type-k", "q8_0",
                               "--cache-type-v", "q4_0"});
  ASSERT_TRUE(f16.contains("cache") && q4.contains("cache") && mixed.contains("cache"))
      << f16.dump() << q4.dump() << mixed.dump();
  EXPECT_EQ(q4["cache"]["cache_type_k"], "q4_0");
  EXPECT_EQ(q4["cache"]["cache_type_v"], "q4_0");
  EXPECT_EQ(mixed["cache"]["cache_type_k"], "q8_0");
  EXPECT_EQ(mixed["cache"]["cache_type_v"], "q4_0");
  const double f16_tokens = f16["cache"]["capacity_tokens"].get<double>();
  const double q4_tokens = q4["cache"]["capacity_tokens"].get<double>();
  const double mixed_tokens = mixed["cache"]["capacity_tokens"].get<double>();
  EXPECT_GT(f16_tokens, 0);
  EXPECT_GE(q4_tokens / f16_tokens, 3.4) << f16_tokens << " " << q4_tokens;
  EXPECT_GE(mixed_tokens / f16_tokens, 2.4) << f16_tokens << " " << mixed_tokens;  // 256 / (68 + 36)
  EXPECT_LT(mixed_tokens, q4_tokens);
  const auto info = run_command(cli() + " info " + shell_quote(model));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find(" at q8_0"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find(" at q4_0"), std::string::npos) << info.out;
}

}  // namespace
}  // namespace clm
