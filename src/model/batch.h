// The input of one forward call. Each token names its sequence (an index into
// the KvView's sequences), its position and the slot of that sequence its K/V
// is written to. A token attends to every filled slot of its sequence whose
// position is <= its own, so a decode step, a prefill chunk and a selective
// recompute are all the same call.
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
};

struct Batch {
  std::vector<BatchToken> tokens;

  void add(int32_t token, int32_t pos, int32_t seq, int32_t slot, bool want_logits) {
    tokens.push_back({token, pos, seq, slot, want_logits});
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
