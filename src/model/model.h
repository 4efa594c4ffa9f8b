// A loaded llama-family model: file map, hyperparameters, bound weights and
// tokenizer, and the forward pass over a Batch. The model reads and writes
// K/V only through the KvView it is handed; it knows nothing of cache policy.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
};

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path, const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const GgufFile& file() const { return file_; }
  // Total bytes of the weights in the file.
  uint64_t weight_bytes() const;

  // Runs one forward call. For every token, writes its K/V into its slot and
  // attends to its sequence's slots at positions <= its own. Logits of the
  // rows with want_logits are written in batch order to `logits`
  // ([n_outputs][n_vocab]). Probe tokens (batch.h) stop at the probe layer;
  // their deviations go, in batch order, to `probe_deviation`
  // ([n_probes]). Sequences whose view asks for attention statistics
  // (kv_view.h) get them added. Not reentrant: one call at a time per Model.
  Status forward(const Batch& batch, const KvView& kv, std::span<float> logits, ThreadPool& pool,
                 std::span<float> probe_deviation = {});

 private:
  Model() = default;
  Status check_batch(const Batch& batch, const KvView& kv, std::size_t logits_size,
                     std::size_t deviation_size) const;
  // Moves the non-probe rows of the scratch buffers (residual, queries) to
  // the front and their tokens to s_.rows; returns how many remain.
  std::size_t drop_probes(std::span<const BatchToken> rows);

  GgufFile file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Tokenizer> tokenizer_;

  // Scratch reused across calls; grown when a batch is larger than any before.
  struct Scratch {
    std::vector<float> x, xn, q, k, v, attn, ffn_gate, ffn_up, out_rows, att_scores;
    std::vector<AttentionGroup> att_groups;     // attention work items when not split by head
    std::vector<std::size_t> att_group_starts;  // with statistics: each group's first row, then T
    std::vector<BatchToken> rows;         // the rows left once probes have stopped
  } s_;
  AttentionStatsCollector stats_;  // used only when a sequence asks for statistics
};

}  // namespace clm
