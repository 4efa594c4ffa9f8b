// Synthetic llama / qwen2 / qwen3 / phi3 models: any shape and weight type,
// weights drawn from a seeded generator, with a working tokenizer. They are the models of
// the tests and benchmarks; their text is meaningless.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/weight_type.h"
#include "model/vocab_metadata.h"
#include "util/error.h"

namespace clm {

struct SyntheticModelSpec {
  std::string arch = "llama";  // "llama", "qwen2", "qwen3" or "phi3"
  std::string name = "synthetic";
  int n_vocab = 512;
  int n_embd = 64;
  int n_ff = 192;
  int n_layers = 2;
  int n_heads = 4;
  int n_kv_heads = 4;
  int n_ctx = 2048;
  int head_dim = 0;   // 0: n_embd / n_heads; otherwise written as attention.key_length
  int rope_dims = 0;  // rotated dimensions per head; 0: the whole head
  WeightType weight_type = WeightType::F32;  // of the matrices; norms and biases stay F32
  bool tied_output = false;                  // omit output.weight
  bool rope_freq_factors = false;            // write llama-3 style rope_freqs.weight
  float rope_freq_base = 10000.0f;
  uint64_t seed = 1;
};

// Named shapes: "tiny" (tests), "demo" (the README's first command),
// "110m" and "1b" (benchmarks, llama shapes of about that many parameters).
Result<SyntheticModelSpec> synthetic_preset(std::string_view name);
std::vector<std::string> synthetic_preset_names();
// Checks the spec for shapes the engine cannot run, with a clear message.
Status validate(const SyntheticModelSpec& spec);
uint64_t parameter_count(const SyntheticModelSpec& spec);
// The head size and rotated dimensions the spec's zeros stand for.
int head_dim_of(const SyntheticModelSpec& spec);
int rope_dims_of(const SyntheticModelSpec& spec);

// With the synthetic vocabulary of the architecture (synthetic_vocab.h).
// The tokenizer family a synthetic model of this architecture gets:
// "gpt2" (byte-level BPE) for qwen2 and qwen3, "llama" (SentencePiece) else.
std::string_view synthetic_tokenizer_model(std::string_view arch);

Status write_synthetic_model(const SyntheticModelSpec& spec, const std::string& path);
// With a given vocabulary, e.g. a real one read from tokenizer.json; its
// token count must equal spec.n_vocab.
Status write_synthetic_model(const SyntheticModelSpec& spec, const VocabMetadata& vocab, const std::string& path);

}  // namespace clm
