// `clmcache info MODEL`: what a GGUF file holds and what running it costs.
#include <cstdio>
#include <map>
#include <string>

#include "app/commands.h"
#include "engine/engine.h"
#include "model/gguf.h"
#include "model/model_config.h"
#include "model/tokenizer.h"

namespace clm {

namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

int info(const std::string& path, int n_ctx) {
  auto file = GgufFile::open(path);
  if (!file) {
    std::fprintf(stderr, "clmcache: %s\n", file.error().message.c_str());
    return 1;
  }
  std::printf("file:          %s (GGUF v%u, %zu tensors, %zu metadata keys)\n", path.c_str(), file->version(),
              file->tensors().size(), file->metadata().size());
  auto config = read_model_config(*file);
  if (!config) {
    std::fprintf(stderr, "clmcache: %s\n", config.error().message.c_str());
    return 1;
  }
  const ModelConfig& c = *config;
  std::printf("architecture:  %s%s%s\n", c.arch_name.c_str(), c.name.empty() ? "" : " - ", c.name.c_str());
  std::printf("layers:        %d\n", c.n_layers);
  std::printf("embedding:     %d (feed-forward %d)\n", c.n_embd, c.n_ff);
  std::printf("heads:         %d query, %d key/value (head dim %d, GQA ratio %d)\n", c.n_heads, c.n_kv_heads,
              c.head_dim, c.n_heads / c.n_kv_heads);
  std::printf("rope:          %s layout, %d dims, base %g%s\n", c.rope_layout == RopeLayout::NeoX ? "neox" : "adjacent",
              c.n_rot, static_cast<double>(c.rope_freq_base), c.rope_freq_factors.empty() ? "" : ", frequency factors");
  std::printf("context:       %d trained\n", c.n_ctx_train);
  std::printf("vocabulary:    %d%s\n", c.n_vocab, c.tied_output ? " (output tied to embedding)" : "");

  std::map<std::string, std::pair<int, uint64_t>> by_type;
  uint64_t weight_bytes = 0, params = 0;
  for (const auto& t : file->tensors()) {
    auto& [count, bytes] = by_type[std::string(weight_type_name(t.type))];
    ++count;
    bytes += t.n_bytes;
    weight_bytes += t.n_bytes;
    params += t.n_elements;
  }
  std::printf("parameters:    %.2f M\n", static_cast<double>(params) / 1e6);
  for (const auto& [name, cb] : by_type)
    std::printf("  %-6s       %d tensors, %s\n", name.c_str(), cb.first, mib(cb.second).c_str());

  auto tok = Tokenizer::from_gguf(*file);
  if (tok) {
    auto model = file->get_string("tokenizer.ggml.model");
    auto pre = file->get_string("tokenizer.ggml.pre");
    std::printf("tokenizer:     %s%s%s, %d tokens, bos %d, eos %d\n", model ? std::string(*model).c_str() : "?",
                pre ? " / " : "", pre ? std::string(*pre).c_str() : "", (*tok)->n_vocab(), (*tok)->bos_id(),
                (*tok)->eos_id());
  } else {
    std::printf("tokenizer:     not supported: %s\n", tok.error().message.c_str());
  }
  const uint64_t ctx = static_cast<uint64_t>(n_ctx);
  const uint64_t kv16 = kv_bytes_per_token(c, KvType::F16) * ctx;
  std::string quantized;  // the quantized types this head_dim can be stored in
  for (KvType t : {KvType::Q8_0, KvType::Fp8, KvType::Q4_0})
    if (kv_type_unsupported(t, c.head_dim).empty())
      quantized += ", " + mib(kv_bytes_per_token(c, t) * ctx) + " at " + std::string(kv_type_name(t));
  std::printf("memory:        weights %s (memory-mapped) + KV %s per %d-token context at f16 (%s at f32%s)\n",
              mib(weight_bytes).c_str(), mib(kv16).c_str(), n_ctx, mib(kv16 * 2).c_str(), quantized.c_str());
  return 0;
}

}  // namespace

void register_info_command(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  auto n_ctx = std::make_shared<int>(4096);
  CLI::App* cmd = app.add_subcommand("info", "describe a GGUF model: shape, tensor types, tokenizer, memory");
  cmd->add_option("model", *path, "GGUF model file")->required();
  cmd->add_option("-c,--ctx-size", *n_ctx, "context size used for the memory estimate")->check(CLI::Range(1, 1 << 24));
  cmd->callback([path, n_ctx, &exit_code] { exit_code = info(*path, *n_ctx); });
}

}  // namespace clm
