// The input of one forward call. Each token names its sequence (an index into
// the KvView's sequences), its position and the slot of that sequence its K/V
// is written to. A token attends to every filled slot of its sequence whose
// position is <= its own, so a decode step, a prefill chunk and a selective
// recompute are all the same call: a recompute is a batch holding only the
// tokens to redo, attending over whatever the other slots hold.
//
// A probe token (blend's first pass) runs the layers before
// Batch::probe_layer only, writing its K/V there, and then measures how far
// the V it would write at probe_layer lies from what its slot holds
// (Model::forward's probe_deviation); it writes nothing at probe_layer or
// later and returns no logits.
//
// A resumed token (blend's second pass) skips the layers before probe_layer:
// its K/V there were written by its probe, and it enters probe_layer with
// the residual its probe left there (Model::forward's probe_residual), so
// it computes exactly what a token run from layer 0 would.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace clm {

struct BatchToken {
  int32_t token = 0;
  int32_t pos = 0;
  int32_t seq = 0;   // index into KvView::seqs
  int32_t slot = 0;  // slot index within that sequence (block = slot / block_size)
  bool want_logits = false;
  bool probe = false;
  bool resumed = false;
};

struct Batch {
  std::vector<BatchToken> tokens;
  // The layer whose K/V probes are measured at; probes run the ones before,
  // resumed tokens the ones from there on.
  int probe_layer = 1;
  // The resumed tokens' residuals at the entry of probe_layer, in batch
  // order: [n_resumed][n_embd].
  std::vector<float> resume_residual;

  void add(int32_t token, int32_t pos, int32_t seq, int32_t slot, bool want_logits) {
    tokens.push_back({token, pos, seq, slot, want_logits, false, false});
  }
  void add_probe(int32_t token, int32_t pos, int32_t seq, int32_t slot) {
    tokens.push_back({token, pos, seq, slot, false, true, false});
  }
  void add_resumed(int32_t token, int32_t pos, int32_t seq, int32_t slot, bool want_logits,
                   std::span<const float> residual) {
    tokens.push_back({token, pos, seq, slot, want_logits, false, true});
    resume_residual.insert(resume_residual.end(), residual.begin(), residual.end());
  }
  int n_probes() const {
    int n = 0;
    for (const auto& t : tokens) n += t.probe ? 1 : 0;
    return n;
  }
  int n_resumed() const {
    int n = 0;
    for (const auto& t : tokens) n += t.resumed ? 1 : 0;
    return n;
  }
  int n_outputs() const {
    int n = 0;
    for (const auto& t : tokens) n += t.want_logits ? 1 : 0;
    return n;
  }
  bool empty() const { return tokens.empty(); }
  void clear() {
    tokens.clear();
    resume_residual.clear();
  }
};

}  // namespace clm
