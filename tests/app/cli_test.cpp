// Drives the real clmcache executable: make-model, info, run.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/reuse_plan.h"
#include "model/bpe_tokenizer.h"
#include "model/utf8.h"
#include "support/float_text.h"
#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm {
namespace {

using test::run_command;
using test::shell_quote;

std::string cli() { return shell_quote(test::cli_binary()); }

TEST(Cli, RunJsonOnRealModelMatchesGolden) {
  std::ifstream in(test::shared_file("golden/stories260K.jsonl"));
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto golden = nlohmann::json::parse(line);
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = run_command(cli() + " run --json --temp 0 -n 16 --top-logprobs 3 -m " + shell_quote(model) +
                             " -p " + shell_quote(golden["prompt"].get<std::string>()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["prompt_token_ids"], golden["prompt_token_ids"]);
  const auto ids = out["token_ids"].get<std::vector<int>>();
  const auto want = golden["generated_token_ids"].get<std::vector<int>>();
  ASSERT_EQ(ids.size(), 16u);
  EXPECT_TRUE(std::equal(ids.begin(), ids.end(), want.begin()));
  ASSERT_EQ(out["logprobs"].size(), 16u);
  EXPECT_EQ(out["logprobs"][0]["top_logprobs"].size(), 3u);
  EXPECT_EQ(out["logprobs"][0]["top_logprobs"][0]["id"], want[0]);
  // Each logprob is its float's shortest decimal.
  for (const auto& step : out["logprobs"]) {
    EXPECT_TRUE(test::written_as_float(step["logprob"].get<double>())) << step["logprob"];
    for (const auto& alt : step["top_logprobs"])
      EXPECT_TRUE(test::written_as_float(alt["logprob"].get<double>())) << alt["logprob"];
  }
  EXPECT_TRUE(out["text"].is_string());
}

TEST(Cli, StreamsTextWithPromptEcho) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = run_command(cli() + " run --temp 0 -n 8 -m " + shell_quote(model) + " -p 'Once upon a time'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little", 0), 0u) << r.out;
}

TEST(Cli, MakeModelThenInfoAndRunForEveryArchAndType) {
  const std::string dir = test::temp_dir();
  for (const std::string arch : {"llama", "qwen2", "qwen3", "phi3"}) {
    for (const std::string type : {"f16", "q8_0", "q4_0", "q4_k"}) {
      const std::string path = dir + "/" + arch + "-" + type + ".gguf";
      // The k-quants need rows of whole 256-element super-blocks. qwen3 gets
      // heads wider than embd / heads, phi3 a partly rotated head.
      std::string shape = type == "q4_k" ? " --embd 256 --ff 256" : "";
      if (arch == "qwen3") shape += " --head-dim 64";
      if (arch == "phi3") shape += " --rope-dims 12";
      auto made = run_command(cli() + " make-model -o " + shell_quote(path) + " --arch " + arch + " --type " + type +
                              " --kv-heads 2" + shape);
      ASSERT_EQ(made.exit_code, 0) << made.err;
      auto info = run_command(cli() + " info " + shell_quote(path));
      ASSERT_EQ(info.exit_code, 0) << info.err;
      EXPECT_NE(info.out.find("architecture:  " + arch), std::string::npos) << info.out;
      const std::string shape_line = arch == "qwen3" ? "head dim 64" : arch == "phi3" ? "neox layout, 12 dims" : "";
      EXPECT_NE(info.out.find(shape_line), std::string::npos) << info.out;
      auto run = run_command(cli() + " run --json --temp 0 -n 5 --ignore-eos -m " + shell_quote(path) +
                             " -p 'hello world'");
      ASSERT_EQ(run.exit_code, 0) << run.err;
      EXPECT_EQ(nlohmann::json::parse(run.out)["token_ids"].size(), 5u) << arch << " " << type;
    }
  }
}

TEST(Cli, SameSeedSameSample) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const std::string cmd = cli() + " run --json --temp 1 -n 24 --seed 42 -m " + shell_quote(model) + " -p 'The dog'";
  const auto a = run_command(cmd), b = run_command(cmd);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["token_ids"], nlohmann::json::parse(b.out)["token_ids"]);
}

TEST(Cli, BadInputGetsMessageAndNonZeroExit) {
  const std::string dir = test::temp_dir();
  auto missing = run_command(cli() + " run -m " + shell_quote(dir + "/nope.gguf") + " -p hi");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("nope.gguf"), std::string::npos) << missing.err;

  const std::string junk = dir + "/junk.gguf";
  std::ofstream(junk) << "this is not a model";
  auto bad = run_command(cli() + " info " + shell_quote(junk));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("gguf"), std::string::npos) << bad.err;

  auto bad_type = run_command(cli() + " make-model -o " + shell_quote(dir + "/x.gguf") + " --type q9_9");
  EXPECT_NE(bad_type.exit_code, 0);
  EXPECT_NE(bad_type.err.find("q9_9"), std::string::npos) << bad_type.err;

  auto bad_shape = run_command(cli() + " make-model -o " + shell_quote(dir + "/y.gguf") + " --heads 5");
  EXPECT_NE(bad_shape.exit_code, 0);
  EXPECT_NE(bad_shape.err.find("multiple"), std::string::npos) << bad_shape.err;

  auto bad_rope = run_command(cli() + " make-model -o " + shell_quote(dir + "/z.gguf") + " --arch phi3 --rope-dims 18");
  EXPECT_NE(bad_rope.exit_code, 0);
  EXPECT_NE(bad_rope.err.find("rope dimensions"), std::string::npos) << bad_rope.err;

  auto too_long = run_command(cli() + " run -c 4 -m " + shell_quote(test::shared_file("models/stories260K.gguf")) +
                              " -p 'Once upon a time there was'");
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_NE(too_long.err.find("context"), std::string::npos) << too_long.err;
}

TEST(Cli, BlockStrategyAndSplitRulesFlags) {
  const std::string dir = test::temp_dir();
  const std::string model = shell_quote(test::shared_file("models/stories260K.gguf"));
  std::ofstream(dir + "/rules.json") << R"({"min_block_length": 4, "rules": [{"pattern": "[^.]*\\.", "type": "step"}]})";
  auto ok = run_command(cli() + " run --temp 0 -n 2 -m " + model + " --reuse shift --block-strategy semantic" +
                        " --split-rules " + shell_quote(dir + "/rules.json") + " -p 'Once upon a time.'");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;

  auto bad_strategy = run_command(cli() + " run -n 1 -m " + model + " --block-strategy sentence -p hi");
  EXPECT_NE(bad_strategy.exit_code, 0);
  EXPECT_NE(bad_strategy.err.find("block-strategy"), std::string::npos) << bad_strategy.err;

  std::ofstream(dir + "/bad_rules.json") << R"({"rules": [{"pattern": "(", "type": "step"}]})";
  auto bad_rules = run_command(cli() + " run -n 1 -m " + model + " --split-rules " +
                               shell_quote(dir + "/bad_rules.json") + " -p hi");
  EXPECT_NE(bad_rules.exit_code, 0);
  EXPECT_NE(bad_rules.err.find("bad_rules.json"), std::string::npos) << bad_rules.err;
  auto missing = run_command(cli() + " run -n 1 -m " + model + " --split-rules " + shell_quote(dir + "/none.json") +
                             " -p hi");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
}

// A small byte-level BPE tokenizer.json: the 256 byte symbols, "hello"
// reachable by merges, filler tokens up to the minimum vocabulary size, and
// ChatML's special tokens.
nlohmann::json small_tokenizer_json() {
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (int b = 0; b < 256; ++b) vocab[utf8_encode(byte_to_unicode(static_cast<uint8_t>(b)))] = id++;
  for (const char* t : {"he", "ll", "hell", "hello"}) vocab[t] = id++;
  for (; id < 310; ++id) vocab["filler" + std::to_string(id)] = id;
  const char* regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  nlohmann::json added = nlohmann::json::array();
  for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    added.push_back({{"id", id++}, {"content", t}, {"special", true}});
  }
  return {{"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", nlohmann::json::array({"h e", "l l", "he ll", "hell o"})}}}};
}

TEST(Cli, MakeModelWithAVocabularyFromTokenizerJson) {
  const std::string dir = test::temp_dir();
  std::ofstream(dir + "/tokenizer.json") << small_tokenizer_json().dump();
  std::ofstream(dir + "/tokenizer_config.json")
      << nlohmann::json{{"eos_token", "<|im_end|>"}, {"add_bos_token", false}, {"chat_template", "{{ x }}"}}.dump();
  const std::string model = dir + "/m.gguf";
  auto made = run_command(cli() + " make-model --arch qwen2 --tokenizer-json " + shell_quote(dir + "/tokenizer.json") +
                          " --tokenizer-config " + shell_quote(dir + "/tokenizer_config.json") + " -o " +
                          shell_quote(model));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.err.find("313 tokens"), std::string::npos) << made.err;
  auto info = run_command(cli() + " info " + shell_quote(model));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("vocabulary:    313"), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("gpt2 / qwen2, 313 tokens"), std::string::npos) << info.out;
  auto run = run_command(cli() + " run --json --temp 0 -n 3 --ignore-eos -m " + shell_quote(model) + " -p hello");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(nlohmann::json::parse(run.out)["prompt_token_ids"], nlohmann::json::array({259}));
}

TEST(Cli, MakeModelRefusesBadTokenizerFiles) {
  const std::string dir = test::temp_dir();
  const std::string out = " -o " + shell_quote(dir + "/m.gguf");
  std::ofstream(dir + "/broken.json") << "{\"model\": [";
  auto broken = run_command(cli() + " make-model --tokenizer-json " + shell_quote(dir + "/broken.json") + out);
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_NE(broken.err.find("not valid JSON"), std::string::npos) << broken.err;
  EXPECT_NE(broken.err.find("broken.json"), std::string::npos) << broken.err;

  nlohmann::json wordpiece = small_tokenizer_json();
  wordpiece["model"]["type"] = "WordPiece";
  std::ofstream(dir + "/wordpiece.json") << wordpiece.dump();
  auto refused = run_command(cli() + " make-model --tokenizer-json " + shell_quote(dir + "/wordpiece.json") + out);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("WordPiece"), std::string::npos) << refused.err;

  std::ofstream(dir + "/tokenizer.json") << small_tokenizer_json().dump();
  auto with_vocab = run_command(cli() + " make-model --vocab 1000 --tokenizer-json " +
                                shell_quote(dir + "/tokenizer.json") + out);
  EXPECT_NE(with_vocab.exit_code, 0);
  EXPECT_NE(with_vocab.err.find("--vocab"), std::string::npos) << with_vocab.err;
  auto config_alone = run_command(cli() + " make-model --tokenizer-config " + shell_quote(dir + "/tokenizer.json") + out);
  EXPECT_NE(config_alone.exit_code, 0);
  EXPECT_NE(config_alone.err.find("--tokenizer-json"), std::string::npos) << config_alone.err;
  auto missing = run_command(cli() + " make-model --tokenizer-json " + shell_quote(dir + "/none.json") + out);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/m.gguf"));
}

TEST(Cli, ReuseFlags) {
  const std::string model = shell_quote(test::shared_file("models/stories260K.gguf"));
  const std::string run = cli() + " run --json --temp 0 -n 2 -m " + model + " -p 'Once upon a time there was a girl'";
  for (const char* mode : {"off", "prefix", "shift", "blend"}) {
    const auto r = run_command(run + " --reuse " + mode +
                               " --min-reuse-tokens 4 --reuse-window 64 --reuse-lead 1 --blend-ratio 0.2 --blend-layer 1");
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    const auto out = nlohmann::json::parse(r.out);
    // One request on an empty cache computes its whole prompt, whatever the mode.
    const int prompt = static_cast<int>(out["prompt_token_ids"].size());
    EXPECT_EQ(out["cached_tokens"], 0) << mode;
    EXPECT_EQ(out["reuse"], nlohmann::json({{"prefix", 0}, {"shift", 0}, {"recomputed", 0}, {"computed", prompt}}))
        << mode;
    EXPECT_EQ(out["blend_probed"], 0) << mode;
    EXPECT_GT(out["prefill_flops"].get<double>(), 0.0) << mode;
  }
  EXPECT_EQ(run_command(run + " --reuse blend --blend-ratio auto").exit_code, 0);
  const std::pair<const char*, const char*> bad_cases[] = {{" --reuse mix", "--reuse"},
                                                           {" --blend-ratio 1.5", "--blend-ratio"},
                                                           {" --blend-ratio some", "--blend-ratio"},
                                                           {" --blend-layer 0", "--blend-layer"},
                                                           {" --reuse-window=-1", "--reuse-window"},
                                                           {" --min-reuse-tokens 0", "--min-reuse-tokens"},
                                                           {" --reuse-lead=-2", "--reuse-lead"},
                                                           {" --no-prefix-cache --reuse shift", "--no-prefix-cache"}};
  for (const auto& [args, named] : bad_cases) {
    const auto r = run_command(run + args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(named), std::string::npos) << args << ": " << r.err;
  }
  // Every command that loads a model has the flags, with ReuseOptions'
  // defaults.
  for (const char* command : {"run", "chat", "serve"}) {
    const auto help = run_command(cli() + " " + command + " --help");
    ASSERT_EQ(help.exit_code, 0) << command;
    for (const char* flag :
         {"--reuse ", "--min-reuse-tokens", "--reuse-window", "--reuse-lead", "--blend-ratio", "--blend-layer",
          "--no-prefix-cache"})
      EXPECT_NE(help.out.find(flag), std::string::npos) << command << " " << flag;
    const std::string lead_line = help.out.substr(help.out.find("--reuse-lead"));
    std::string lead = std::to_string(ReuseOptions{}.lead);
    lead.insert(lead.begin(), '=');
    EXPECT_NE(lead_line.substr(0, lead_line.find('\n')).find(lead), std::string::npos) << lead_line;
  }
}

TEST(Cli, NoModelGeneratesTheSyntheticDemoOnceAndSaysSo) {
  const std::string cache = test::temp_dir();
  const std::string env = "env -u CLMCACHE_MODEL XDG_CACHE_HOME=" + shell_quote(cache) + " ";
  auto first = run_command(env + cli() + " run -n 4 --temp 0 -p hello");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("meaningless"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("writing a synthetic demo model"), std::string::npos);
  auto second = run_command(env + cli() + " run -n 4 --temp 0 -p hello");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.err.find("writing a synthetic demo model"), std::string::npos) << "generated twice";
  EXPECT_EQ(first.out, second.out);
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

TEST(CliBench, ModelBenchReportsPpAndTgAsJson) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = test::run_command(cli() + " bench model -m " + test::shell_quote(model) +
                                   " -p 16 -n 4 -r 2 -t 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pp"]["tokens"], 16);
  EXPECT_EQ(j["tg"]["tokens"], 4);
  EXPECT_EQ(j["pp"]["tokens_per_second"]["n"], 2);
  EXPECT_GT(j["pp"]["tokens_per_second"]["median"].get<double>(), 0.0);
  EXPECT_GT(j["tg"]["tokens_per_second"]["median"].get<double>(), 0.0);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_GT(j["weight_bytes"].get<double>(), 1e6);
}

// With -d the runs follow that many cached tokens: the pool holds them
// (a pool sized for -p or -n alone could not take 700 more), and the output
// names the depth as llama-bench does.
TEST(CliBench, ModelBenchRunsAtADepth) {
  const std::string model = test::shell_quote(test::shared_file("models/stories260K.gguf"));
  const auto j = test::run_command(cli() + " bench model -m " + model + " -d 700 -p 8 -n 4 -r 1 -t 1 -o json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["depth"], 700);
  EXPECT_GT(parsed["tg"]["tokens_per_second"]["median"].get<double>(), 0.0);
  const auto md = test::run_command(cli() + " bench model -m " + model + " -d 700 -p 0 -n 4 -r 1 -t 1");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| tg4 @ d700 |"), std::string::npos) << md.out;
  const auto bad = test::run_command(cli() + " bench model -m " + model + " -d -1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--depth"), std::string::npos) << bad.err;
}

TEST(CliBench, ModelBenchRejectsMissingModel) {
  const auto r = test::run_command(cli() + " bench model -m /nonexistent/model.gguf -p 8 -n 2 -r 1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("model.gguf"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

TEST(CliBench, MemoryBenchReportsBandwidth) {
  const auto r = test::run_command(cli() + " bench memory --size-mb 64 -r 2 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_GT(j["read_gb_per_s"]["median"].get<double>(), 0.1);
  EXPECT_GE(j["read_gb_per_s"]["max"].get<double>(), j["read_gb_per_s"]["min"].get<double>());
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

TEST(CliBench, DialogueBenchShowsReuseAndSharing) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = test::run_command(cli() + " bench dialogue -m " + test::shell_quote(model) +
                                   " --history 120 --question 8 -r 1 --sessions 3 --system-tokens 70 --turns 2"
                                   " --user-tokens 5 --reply-tokens 4 -t 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The cold run leaves BOS + 120 + 8 tokens: 4 full blocks of 32 cached.
  // The warm run reuses the whole history (3 shared blocks and 25 tokens
  // copied from the fourth) and at most the turn marker of its question.
  EXPECT_GE(j["ttft"]["warm_cached_tokens"].get<int>(), 121);
  EXPECT_LT(j["ttft"]["warm_cached_tokens"].get<int>(), 121 + 8);
  const auto& with = j["sessions"]["with_sharing"];
  const auto& without = j["sessions"]["without_sharing"];
  EXPECT_EQ(with["generated_tokens"], 3 * 2 * 4);
  EXPECT_EQ(without["generated_tokens"], 3 * 2 * 4);
  EXPECT_GT(with["cached_tokens"].get<int>(), 0);
  EXPECT_EQ(without["cached_tokens"], 0);
  EXPECT_LT(with["peak_kv_blocks"].get<int>(), without["peak_kv_blocks"].get<int>());
  EXPECT_LE(j["sessions"]["memory_with_over_ideal"].get<double>(), 1.1);
}

// --scaling as JSON: one row per session count, with the prompt tokens the
// run computed and the rate of the steps that only decoded.
TEST(CliBench, DialogueScalingJsonHasOneRowPerSessionCount) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = test::run_command(cli() + " bench dialogue -m " + test::shell_quote(model) +
                                   " --scaling 1,3 --system-tokens 70 --turns 2 --user-tokens 5 --reply-tokens 4"
                                   " -t 1 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["prefill32_tokens_per_second"].get<double>(), 0.0);
  ASSERT_EQ(j["rows"].size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& row = j["rows"][i];
    const int n = i == 0 ? 1 : 3;
    EXPECT_EQ(row["sessions"], n);
    EXPECT_EQ(row["generated_tokens"], n * 2 * 4);
    // Every user turn is computed; the shared system prompt is not.
    EXPECT_GE(row["prompt_tokens_computed"].get<int>(), n * 2 * 5);
    EXPECT_LT(row["prompt_tokens_computed"].get<int>(), n * 2 * (5 + 70));
    // Each turn's replies after the first token come from decode-only steps.
    EXPECT_GT(row["decode_only_tokens_per_second"].get<double>(), 0.0);
    EXPECT_NEAR(row["decode_only_over_prefill32"].get<double>(),
                row["decode_only_tokens_per_second"].get<double>() / j["prefill32_tokens_per_second"].get<double>(),
                1e-9);
  }
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

TEST(CliChat, SecondTurnReusesTheFirstFromTheCache) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = test::run_command("printf 'Tell me a story\\nAnd then?\\n/stats\\n' | " + cli() + " chat -m " +
                                   test::shell_quote(model) + " --temp 0 -n 12");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Two replies were printed, and the second turn's prompt came mostly from the cache.
  EXPECT_NE(r.err.find("chat format: plain"), std::string::npos) << r.err;
  const auto first = r.err.find(" reused from the cache");
  ASSERT_NE(first, std::string::npos) << r.err;
  const auto second = r.err.find(" reused from the cache", first + 1);
  ASSERT_NE(second, std::string::npos) << r.err;
  const auto line_start = r.err.rfind('[', second);
  const std::string line = r.err.substr(line_start, second - line_start);
  int prompt_tokens = 0, reused = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "[%d prompt tokens: %d", &prompt_tokens, &reused), 2) << line;
  EXPECT_GT(reused, prompt_tokens / 2) << line;
  EXPECT_NE(r.err.find("[cache: "), std::string::npos);
}

TEST(CliChat, UnknownFormatIsRefused) {
  const std::string model = test::shared_file("models/stories260K.gguf");
  const auto r = test::run_command("echo hi | " + cli() + " chat -m " + test::shell_quote(model) + " --chat-format nope");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clm

namespace clm {
namespace {

uint64_t fingerprint_of(const std::string& run_json) {
  return std::stoull(nlohmann::json::parse(run_json)["model_fingerprint"].get<std::string>(), nullptr, 16);
}

// The fingerprint hashes every weight byte, so it is remembered per file
// (path, size, modification time) in the user cache directory.
TEST(CliFingerprint, IsRememberedPerFileAndRecomputedWhenTheFileChanges) {
  const std::string dir = test::temp_dir();
  const std::string model = dir + "/model.gguf";
  std::filesystem::copy_file(test::shared_file("models/stories260K.gguf"), model);
  const std::string env = "XDG_CACHE_HOME=" + test::shell_quote(dir + "/cache") + " ";
  const std::string cmd = env + cli() + " run --json -n 1 --temp 0 -p hi -m " + test::shell_quote(model);
  const auto first = test::run_command(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const uint64_t fp = fingerprint_of(first.out);

  const std::string memo_path = dir + "/cache/clmcache/fingerprints.json";
  std::ifstream in(memo_path);
  ASSERT_TRUE(in) << "no memo at " << memo_path;
  nlohmann::json memo = nlohmann::json::parse(in);
  ASSERT_EQ(memo.size(), 1u);
  auto& entry = memo.begin().value();
  EXPECT_EQ(std::stoull(entry["fingerprint"].get<std::string>(), nullptr, 16), fp);

  // A remembered value is used as is: tamper with it and see it come back.
  entry["fingerprint"] = "abc";
  std::ofstream(memo_path) << memo.dump();
  const auto second = test::run_command(cmd);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(fingerprint_of(second.out), 0xabcu);

  // A changed file is hashed again.
  std::filesystem::last_write_time(model, std::filesystem::last_write_time(model) + std::chrono::seconds(5));
  const auto third = test::run_command(cmd);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(fingerprint_of(third.out), fp);
}

}  // namespace
}  // namespace clm
