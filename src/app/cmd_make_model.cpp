// `clmcache make-model`: write a synthetic llama, qwen2, qwen3 or phi3 GGUF
// of any shape and weight type from a seed, with a made-up vocabulary or a
// real one read from a Hugging Face tokenizer.json.
#include <cstdio>

#include "app/commands.h"
#include "model/hf_tokenizer_json.h"
#include "model/synthetic_model.h"
#include "model/synthetic_vocab.h"

namespace clm {

namespace {

struct MakeModelFlags {
  std::string output;
  std::string preset = "tiny";
  std::string arch;
  std::string weight_type = "f32";
  int n_vocab = -1, n_embd = -1, n_ff = -1, n_layers = -1, n_heads = -1, n_kv_heads = -1, n_ctx = -1;
  int head_dim = -1, rope_dims = -1;
  bool tied = false;
  bool rope_freq_factors = false;
  float rope_freq_base = -1.0f;
  uint64_t seed = 1;
  std::string tokenizer_json;
  std::string tokenizer_config;
};

int make_model(const MakeModelFlags& f) {
  auto spec = synthetic_preset(f.preset);
  if (!spec) {
    std::fprintf(stderr, "clmcache: %s\n", spec.error().message.c_str());
    return 1;
  }
  SyntheticModelSpec& s = *spec;
  auto set = [](int& dst, int v) {
    if (v > 0) dst = v;
  };
  if (!f.arch.empty()) s.arch = f.arch;
  set(s.n_vocab, f.n_vocab);
  set(s.n_embd, f.n_embd);
  set(s.n_ff, f.n_ff);
  set(s.n_layers, f.n_layers);
  set(s.n_heads, f.n_heads);
  set(s.n_kv_heads, f.n_kv_heads);
  set(s.n_ctx, f.n_ctx);
  set(s.head_dim, f.head_dim);
  set(s.rope_dims, f.rope_dims);
  if (f.tied) s.tied_output = true;
  s.rope_freq_factors = f.rope_freq_factors;
  if (f.rope_freq_base > 0) s.rope_freq_base = f.rope_freq_base;
  s.seed = f.seed;
  auto type = parse_weight_type(f.weight_type);
  if (!type) {
    std::fprintf(stderr, "clmcache: unknown weight type '%s' (f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k)\n", f.weight_type.c_str());
    return 1;
  }
  s.weight_type = *type;
  Result<VocabMetadata> vocab = f.tokenizer_json.empty()
                                    ? make_synthetic_vocab(std::string(synthetic_tokenizer_model(s.arch)), s.n_vocab)
                                    : load_hf_tokenizer(f.tokenizer_json, f.tokenizer_config);
  if (!vocab) {
    std::fprintf(stderr, "clmcache: %s\n", vocab.error().message.c_str());
    return 1;
  }
  // A vocabulary read from a file sets the model's vocabulary size.
  s.n_vocab = static_cast<int>(vocab->tokens.size());
  if (auto ok = write_synthetic_model(s, *vocab, f.output); !ok) {
    std::fprintf(stderr, "clmcache: %s\n", ok.error().message.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s: %s, %.2f M parameters, %s weights, %d tokens (%s, pre-tokenizer %s)\n",
               f.output.c_str(), s.arch.c_str(), static_cast<double>(parameter_count(s)) / 1e6,
               std::string(weight_type_name(s.weight_type)).c_str(), s.n_vocab, vocab->model.c_str(),
               vocab->pre.c_str());
  return 0;
}

}  // namespace

void register_make_model_command(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<MakeModelFlags>();
  CLI::App* cmd = app.add_subcommand("make-model", "write a synthetic GGUF model (random weights, working tokenizer)");
  cmd->add_option("-o,--output", f->output, "output GGUF path")->required();
  cmd->add_option("--preset", f->preset, "base shape: tiny, demo, 110m, 1b")
      ->check(CLI::IsMember({"tiny", "demo", "110m", "1b"}));
  cmd->add_option("--arch", f->arch, "llama, qwen2, qwen3 or phi3")
      ->check(CLI::IsMember({"llama", "qwen2", "qwen3", "phi3"}));
  cmd->add_option("--type", f->weight_type, "weight type of the matrices: f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k (k-quants need --embd and --ff multiples of 256)");
  auto* vocab_size = cmd->add_option("--vocab", f->n_vocab, "vocabulary size");
  cmd->add_option("--embd", f->n_embd, "embedding size");
  cmd->add_option("--ff", f->n_ff, "feed-forward size");
  cmd->add_option("--layers", f->n_layers, "layer count");
  cmd->add_option("--heads", f->n_heads, "query heads");
  cmd->add_option("--kv-heads", f->n_kv_heads, "key/value heads (GQA when fewer than --heads)");
  cmd->add_option("--ctx", f->n_ctx, "trained context length written to the metadata");
  cmd->add_option("--head-dim", f->head_dim, "head dimension (default: embedding size / heads)");
  cmd->add_option("--rope-dims", f->rope_dims, "rotated dimensions per head (default: the whole head)");
  cmd->add_option("--rope-base", f->rope_freq_base, "rope frequency base");
  cmd->add_flag("--tied", f->tied, "tie the output matrix to the embedding (no output.weight)");
  cmd->add_flag("--rope-freq-factors", f->rope_freq_factors, "write llama-3 style rope frequency factors");
  cmd->add_option("--seed", f->seed, "seed of the weights");
  auto* tokenizer_json =
      cmd->add_option("--tokenizer-json", f->tokenizer_json,
                      "a Hugging Face tokenizer.json (byte-level BPE) whose vocabulary the model carries; "
                      "the vocabulary size follows it")
          ->check(CLI::ExistingFile)
          ->excludes(vocab_size);
  cmd->add_option("--tokenizer-config", f->tokenizer_config,
                  "the tokenizer_config.json beside it: special tokens, add_bos_token, chat template")
      ->check(CLI::ExistingFile)
      ->needs(tokenizer_json);
  cmd->callback([f, &exit_code] { exit_code = make_model(*f); });
}

}  // namespace clm
