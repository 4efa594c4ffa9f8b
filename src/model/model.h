// A loaded llama-family model: file map, hyperparameters, bound weights and
// tokenizer, and the forward pass over a Batch. The model reads and writes
// K/V only through the KvView it is handed; it knows nothing of cache policy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/attention_groups.h"
#include "model/attention_stats.h"
#include "model/batch.h"
#include "model/gguf.h"
#include "model/kv_view.h"
#include "model/model_config.h"
#include "model/tokenizer.h"
#include "model/weights.h"
#include "util/chunk_buffers.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace clm {

struct LoadOptions {
  // Where the weights live (util/file_image.h): a private huge-page copy by
  // default, which decodes much faster; Map uses the page cache in place.
  FileLoad load = FileLoad::Copy;
  // Called with a fraction in [0, 1] while the weights are read or paged in.
  std::function<void(float)> on_progress;
  // With Map: touch every weight page at load so the first request does not
  // pay for it. (A Copy has read every byte already.)
  bool prefault = true;
  // Give the file's bytes of the F16 / BF16 matrices multiplied from panels
  // (weights.h) back as each is packed: a 1B F16 model then holds one copy
  // (2.1 GiB), not two, at load and after. Only what reads the file itself
  // needs those bytes, so the model fingerprint is taken first (unless
  // known_fingerprint is given) and kept in fingerprint(). Afterwards they
  // read as zeros with the default copy, and page back in from the file with
  // a map; the token embedding's rows, which are looked up, stay.
  bool release_packed_file_bytes = false;
  std::optional<uint64_t> known_fingerprint;
};

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path, const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const GgufFile& file() const { return file_; }
  const ModelWeights& weights() const { return weights_; }
  // The model fingerprint (model/fingerprint.h) when the load took it, that
  // is with release_packed_file_bytes; nullopt otherwise.
  std::optional<uint64_t> fingerprint() const { return fingerprint_; }
  // Total bytes of the weights in the file.
  uint64_t weight_bytes() const;

  // Runs one forward call. For every token, writes its K/V into its slot and
  // attends to its sequence's slots at positions <= its own. Logits of the
  // rows with want_logits are written in batch order to `logits`
  // ([n_outputs][n_vocab]). Probe tokens (batch.h) stop at the probe layer;
  // their deviations go, in batch order, to `probe_deviation`
  // ([n_probes]), and, when probe_residual is not empty, their residuals
  // at the entry of the probe layer ([n_probes][n_embd]), what resumed
  // tokens start from. Sequences whose view asks for attention statistics
  // (kv_view.h) get them added. Not reentrant: one call at a time per Model.
  Status forward(const Batch& batch, const KvView& kv, std::span<float> logits, ThreadPool& pool,
                 std::span<float> probe_deviation = {}, std::span<float> probe_residual = {});

 private:
  Model() = default;
  class ForwardPass;  // one call's stages (forward_pass.cpp)
  Status check_batch(const Batch& batch, const KvView& kv, std::size_t logits_size, std::size_t deviation_size,
                     std::size_t residual_size) const;
  // Every probe row's deviation at `layer` (w's layer): its V computed from
  // the residual s_.x, against the V its slot holds.
  void measure_probes(const LayerWeights& w, int layer, std::span<const BatchToken> rows, const KvView& kv,
                      std::span<const int32_t> probe_rank, std::span<float> probe_deviation, ThreadPool& pool);
  // The rows that compute the probe layer on, in batch order: `rows` less
  // the probes, plus the resumed tokens with their residuals. Rebuilds the
  // residual s_.x and s_.rows; returns how many rows there are.
  std::size_t enter_probe_layer(const Batch& batch, std::span<const BatchToken> rows);

  GgufFile file_;
  std::optional<uint64_t> fingerprint_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;

  // Scratch reused across calls; grown when a batch is larger than any before.
  struct Scratch {
    std::vector<float> x, xn, q, k, v, attn, ffn_gate, ffn_up, out_rows, att_scores;
    std::vector<float> probe_in, probe_v;  // the probes' normed inputs and V at the probe layer
    std::vector<float> x_next;             // the residual being rebuilt at the probe layer
    std::vector<AttentionGroup> att_groups;     // attention work items when not split by head
    ChunkBuffers group_scratch;                 // each running attention chunk's scratch
    std::vector<std::size_t> att_group_starts;  // with statistics: each group's first row, then T
    std::vector<BatchToken> rows;  // the rows computed when they are not the batch's tokens
    std::vector<std::size_t> out_at;  // the row of each output (a row that wants logits)
  } s_;
  AttentionStatsCollector stats_;  // used only when a sequence asks for statistics
};

}  // namespace clm
