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
#pragma once

#include <cstdint>
#include <vector>

namespace clm {

struct BatchToken {
  int32_t token = 0;
  int32_t pos = 0;
  int32_t seq = 0;   // index into KvView::seqs
  int32_t slot = 0;  // slot index within that sequence (block = slot / block_size)
  bool want_logits = false;
  bool probe = false;
};

struct Batch {
  std::vector<BatchToken> tokens;
  // The layer whose K/V probes are measured at; probes run the ones before.
  int probe_layer = 1;

  void add(int32_t token, int32_t pos, int32_t seq, int32_t slot, bool want_logits) {
    tokens.push_back({token, pos, seq, slot, want_logits, false});
  }
  void add_probe(int32_t token, int32_t pos, int32_t seq, int32_t slot) {
    tokens.push_back({token, pos, seq, slot, false, true});
  }
  int n_probes() const {
    int n = 0;
    for (const auto& t : tokens) n += t.probe ? 1 : 0;
    return n;
  }
  int n_outputs() const {
    int n = 0;
    for (const auto& t : tokens) n += t.want_logits ? 1 : 0;
    return n;
  }
  bool empty() const { return tokens.empty(); }
  void clear() { tokens.clear(); }
};

}  // namespace clm
