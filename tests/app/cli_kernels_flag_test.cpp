// --kernels through the real executable: every computing command takes it,
// the forced path is the one the benchmarks report and the one whose
// numerics key the disk tier's entries, and a bad or unavailable path is an
// error that names the flag.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "app/kernels_flag.h"
#include "kernels/cpu_features.h"
#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using nlohmann::json;
using test::run_command;
using test::shell_quote;

std::string cli() { return shell_quote(test::cli_binary()); }
std::string tiny_model() { return shell_quote(test::shared_file("models/stories260K.gguf")); }

TEST(KernelsFlag, EveryComputingCommandTakesIt) {
  for (const char* command :
       {"run", "chat", "serve", "bench model", "bench dialogue", "bench longchat", "bench reuse", "bench rag",
        "bench restore", "bench peak", "bench memory", "eval reuse", "eval evict"}) {
    const auto help = run_command(cli() + " " + command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command << ": " << help.err;
    EXPECT_NE(help.out.find("--kernels"), std::string::npos) << command;
  }
}

TEST(KernelsFlag, BenchPeakReportsTheForcedPath) {
  ASSERT_TRUE(kernel_path_supported(KernelPath::Avx2)) << "the reference machines have AVX2";
  for (const char* path : {"scalar", "avx2"}) {
    const auto r = run_command(cli() + " bench peak -t 1 --ms 20 -r 1 --kernels " + path);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("| ") + path + " |"), std::string::npos) << r.out;
  }
  const auto widest = run_command(cli() + " bench peak -t 1 --ms 20 -r 1 --kernels auto");
  ASSERT_EQ(widest.exit_code, 0) << widest.err;
  EXPECT_NE(widest.out.find("| " + std::string(kernel_path_name(best_kernel_path())) + " |"), std::string::npos)
      << widest.out;
}

TEST(KernelsFlag, BenchModelReportsTheForcedPath) {
  const auto r = run_command(cli() + " bench model -m " + tiny_model() + " -p 8 -n 0 -r 1 -t 1 -o json --kernels scalar");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["kernel_path"], "scalar") << r.out;
}

TEST(KernelsFlag, ABadValueIsAnErrorNamingTheFlag) {
  const std::string commands[] = {"run -p Once -m " + tiny_model(), "bench peak", "eval reuse --cases x -m x"};
  for (const std::string& command : commands) {
    const auto r = run_command(cli() + " " + command + " --kernels sse9");
    EXPECT_NE(r.exit_code, 0) << command;
    EXPECT_NE(r.err.find("--kernels"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("sse9"), std::string::npos) << r.err;
  }
}

// The CPU here runs every path, so the refusal of a missing one is checked
// against the widest paths other CPUs have.
TEST(KernelsFlag, APathTheCpuLacksIsRefusedNamingItsWidest) {
  EXPECT_EQ(kernels_flag_error("avx2", KernelPath::Avx2), "");
  EXPECT_EQ(kernels_flag_error("scalar", KernelPath::Scalar), "");
  EXPECT_EQ(kernels_flag_error("auto", KernelPath::Scalar), "");
  EXPECT_EQ(kernels_flag_error("avx512vnni", KernelPath::Avx512Vnni), "");
  const std::string no_avx512 = kernels_flag_error("avx512", KernelPath::Avx2);
  EXPECT_NE(no_avx512.find("avx512"), std::string::npos) << no_avx512;
  EXPECT_NE(no_avx512.find("widest path is avx2"), std::string::npos) << no_avx512;
  EXPECT_NE(kernels_flag_error("avx512vnni", KernelPath::Avx512).find("widest path is avx512"), std::string::npos);
  EXPECT_NE(kernels_flag_error("avx2", KernelPath::Scalar).find("widest path is scalar"), std::string::npos);
  EXPECT_NE(kernels_flag_error("AVX2", KernelPath::Avx512Vnni), "") << "names are lower case, as reported";
}

json run_forced(const std::string& path, const std::string& disk_cache) {
  const auto r = run_command(cli() + " run --json --temp 0 -n 4 --block-size 16 -m " + tiny_model() +
                             " --disk-cache " + shell_quote(disk_cache) + " --min-free-space-gb 0 --kernels " + path +
                             " -p " + shell_quote("Once upon a time there was a little girl who lived in a small "
                                                  "house near the big forest with her mother and her dog"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json{};
}

// K/V computed on the avx2 path rounds differently from the scalar path's,
// so a process forced to one path finds nothing the other wrote, and a
// second process on the same path finds it all.
TEST(KernelsFlag, AForcedPathKeysTheDiskTierWithItsOwnNumerics) {
  ASSERT_TRUE(kernel_path_supported(KernelPath::Avx2)) << "the reference machines have AVX2";
  const std::string dir = test::temp_dir() + "/cache";
  const json first = run_forced("avx2", dir);
  ASSERT_FALSE(first.is_null());
  EXPECT_EQ(first["cached_tokens"], 0);
  const json other = run_forced("scalar", dir);
  ASSERT_FALSE(other.is_null());
  EXPECT_EQ(other["cached_tokens"], 0) << "the avx2 entries are not the scalar path's";
  const json same = run_forced("avx2", dir);
  ASSERT_FALSE(same.is_null());
  EXPECT_GT(same["cached_tokens"].get<int>(), 0) << "the entries the first avx2 run wrote";
  EXPECT_EQ(first["token_ids"], same["token_ids"]);
}

}  // namespace
}  // namespace clm
