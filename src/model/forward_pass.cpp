// Model::forward, stage by stage, as the paper draws it: the token
// embeddings, the layers, the output head. Blend splits the layers at its
// probe layer: every row runs up to it, the probes are measured there and
// leave, the resumed rows (blend's chosen tokens, computed up to there by an
// earlier call) join, and the rows that go on run the remaining layers.
#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "model/attention_stats.h"
#include "model/model.h"

namespace clm {

namespace {

void grow(std::vector<float>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
}

void add_in_place(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

// One call's state: the rows being computed and their residual stream.
class Model::ForwardPass {
 public:
  ForwardPass(Model& m, const Batch& batch, const KvView& kv, ThreadPool& pool);
  // Layers [first, last) over the current rows (none: nothing to do).
  void run_layers(int first, int last);
  // At the probe layer: the probes' deviations (and residuals) are
  // measured, then the rows become those that go on. False when none do.
  bool enter_probe_layer(std::span<float> probe_deviation, std::span<float> probe_residual);
  // Logits of the rows that want them, in batch order.
  void head(std::span<float> logits);

 private:
  void arrange_attention();
  // The residual stream's pending step for row t, done by whichever loop next
  // reads the row (the loops per layer are few, so each hand-off saved
  // counts): the embedding is looked up in the first layer's norm loop, and
  // the feed-forward output is added in the next layer's norm loop (or the
  // output head's).
  void settle_row(std::size_t t);
  // The row-wise steps between matmuls, spread over the pool by row.
  template <class Fn>
  void per_row(Fn&& fn) {
    pool_.parallel_for(T_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t t = begin; t < end; ++t) fn(t);
    });
  }
  void layer(int l);
  // Q, K and V of every row, with K/V written to the cache.
  void project_qkv(const LayerWeights& w, int layer);
  void attend(int layer);
  void feed_forward(const LayerWeights& w);

  Model& m_;
  const ModelConfig& c_;
  Scratch& s_;
  const Batch& batch_;
  const KvView& kv_;
  const KvGeometry& g_;
  ThreadPool& pool_;
  const std::size_t E_, Q_, KV_, F_, H_;
  std::size_t slot_room_ = 0, att_stride_ = 0;
  // The rows being computed, in batch order: every token but the resumed
  // ones, until at the probe layer the probes leave and the resumed tokens
  // join. Each row's arithmetic depends only on its own inputs and the
  // cache, so dropping or adding rows changes nothing for the others.
  std::span<const BatchToken> rows_;
  std::size_t T_ = 0;
  const bool stats_;
  bool by_head_ = false;
  int max_group_rows_ = 1;  // the largest attention group's queries
  float* x_;
  float* xn_;
  bool embed_pending_ = true;     // x rows not yet looked up
  bool ffn_out_pending_ = false;  // xn holds the last sublayer's output, not yet added to x
  const bool neox_;
  const float* freq_factors_;
  const float scale_;
  // probe_rank_[t]: where batch row t's deviation goes (rows are still in
  // batch order when the probes are measured).
  std::vector<int32_t> probe_rank_;
};

Model::ForwardPass::ForwardPass(Model& m, const Batch& batch, const KvView& kv, ThreadPool& pool)
    : m_(m),
      c_(m.config_),
      s_(m.s_),
      batch_(batch),
      kv_(kv),
      g_(kv.geometry),
      pool_(pool),
      E_(static_cast<std::size_t>(c_.n_embd)),
      Q_(static_cast<std::size_t>(c_.n_heads * c_.head_dim)),
      KV_(static_cast<std::size_t>(c_.n_kv_heads * c_.head_dim)),
      F_(static_cast<std::size_t>(c_.n_ff)),
      H_(static_cast<std::size_t>(c_.n_heads)),
      stats_(any_attention_stats(kv)),
      neox_(c_.rope_layout == RopeLayout::NeoX),
      freq_factors_(c_.rope_freq_factors.empty() ? nullptr : c_.rope_freq_factors.data()),
      scale_(1.0f / std::sqrt(static_cast<float>(c_.head_dim))) {
  std::size_t max_slots = 0;
  for (const auto& s : kv.seqs) max_slots = std::max(max_slots, s.slot_positions.size());
  // The attention scratch is sized for whole blocks: a sequence gains a slot
  // every decode step, and its scratch then grows only when it takes a new
  // block, not at every step.
  const std::size_t bs = static_cast<std::size_t>(std::max(1, g_.block_size));
  slot_room_ = (max_slots + bs - 1) / bs * bs;
  att_stride_ = slot_room_ + static_cast<std::size_t>(c_.head_dim);

  rows_ = batch.tokens;
  if (batch.n_resumed() > 0) {
    s_.rows.clear();
    for (const BatchToken& t : batch.tokens)
      if (!t.resumed) s_.rows.push_back(t);
    rows_ = s_.rows;
  }
  T_ = rows_.size();
  const std::size_t n_all = batch.tokens.size();  // rows at most, at any layer
  grow(s_.x, n_all * E_);         // [T][E] residual stream
  grow(s_.xn, n_all * E_);        // [T][E] normed input / sublayer output
  grow(s_.q, n_all * Q_);         // [T][n_heads][head_dim]
  grow(s_.k, n_all * KV_);        // [T][n_kv_heads][head_dim]
  grow(s_.v, n_all * KV_);        // [T][n_kv_heads][head_dim]
  grow(s_.attn, n_all * Q_);      // [T][n_heads][head_dim] attention output
  grow(s_.ffn_gate, n_all * F_);  // [T][F]
  grow(s_.ffn_up, n_all * F_);    // [T][F]
  arrange_attention();
  x_ = s_.x.data();
  xn_ = s_.xn.data();
  if (batch.n_probes() > 0) {
    probe_rank_.resize(T_, -1);
    int32_t next = 0;
    for (std::size_t t = 0; t < T_; ++t)
      if (rows_[t].probe) probe_rank_[t] = next++;
  }
}

void Model::ForwardPass::arrange_attention() {
  // A few rows (decode) are too few to keep every thread busy, so their
  // attention is split by head too; heads are computed alike either way.
  // Otherwise consecutive rows of one sequence attend as a group.
  by_head_ = T_ < 4 * static_cast<std::size_t>(pool_.size());
  if (by_head_) {
    grow(s_.att_scores, T_ * H_ * att_stride_);  // [T*H][slots + head_dim] attention scratch
    return;
  }
  // Cascades as large as keep at least 4 work items (group, head) per
  // thread: fewer passes over the shared prefix, every thread still busy.
  const std::size_t per_cascade = T_ * H_ / (4 * static_cast<std::size_t>(pool_.size()));
  const int max_cascade =
      static_cast<int>(std::clamp<std::size_t>(per_cascade, kMaxGroupQueries, kMaxCascadeQueries));
  arrange_attention_groups(rows_.first(T_), kv_, /*cascades=*/!stats_, s_.att_groups, max_cascade);
  max_group_rows_ = 1;
  for (const AttentionGroup& grp : s_.att_groups) max_group_rows_ = std::max(max_group_rows_, grp.n_rows);
  s_.att_group_starts.clear();
  if (stats_) {  // the collector's units: each group's first row, then T
    for (const AttentionGroup& grp : s_.att_groups) s_.att_group_starts.push_back(grp.rows[0]);
    s_.att_group_starts.push_back(T_);
  }
}

void Model::ForwardPass::settle_row(std::size_t t) {
  if (embed_pending_) {
    const WeightMatrix& emb = m_.weights_.token_embd;
    dequantize_row(emb.type, emb.data + static_cast<std::size_t>(rows_[t].token) * emb.row_bytes, x_ + t * E_, E_);
  } else if (ffn_out_pending_) {
    add_in_place(x_ + t * E_, xn_ + t * E_, E_);
  }
}

void Model::ForwardPass::run_layers(int first, int last) {
  if (T_ == 0) return;  // resumed tokens only: they start at the probe layer
  for (int l = first; l < last; ++l) layer(l);
}

void Model::ForwardPass::layer(int l) {
  const LayerWeights& w = m_.weights_.layers[static_cast<std::size_t>(l)];
  project_qkv(w, l);
  attend(l);
  matmul(w.wo, s_.attn.data(), static_cast<int>(T_), xn_, pool_);
  feed_forward(w);
}

void Model::ForwardPass::project_qkv(const LayerWeights& w, int layer) {
  auto attn_norm = [&](std::size_t t) {
    settle_row(t);
    rmsnorm(x_ + t * E_, w.attn_norm, c_.n_embd, c_.rms_eps, xn_ + t * E_);
  };
  const MatmulOutput qkv[] = {{&w.wq, s_.q.data()}, {&w.wk, s_.k.data()}, {&w.wv, s_.v.data()}};
  matmul_shared_input(qkv, xn_, static_cast<int>(T_), pool_, RowPrep(attn_norm));
  embed_pending_ = ffn_out_pending_ = false;
  per_row([&](std::size_t t) {
    float* qt = s_.q.data() + t * Q_;
    float* kt = s_.k.data() + t * KV_;
    float* vt = s_.v.data() + t * KV_;
    if (w.bq != nullptr) {
      add_bias(qt, w.bq, static_cast<int>(Q_));
      add_bias(kt, w.bk, static_cast<int>(KV_));
      add_bias(vt, w.bv, static_cast<int>(KV_));
    }
    if (w.q_norm != nullptr) {  // qwen3: every head normed on its own, before RoPE
      const int hd = c_.head_dim;
      for (int h = 0; h < c_.n_heads; ++h) rmsnorm(qt + h * hd, w.q_norm, hd, c_.rms_eps, qt + h * hd);
      for (int h = 0; h < c_.n_kv_heads; ++h) rmsnorm(kt + h * hd, w.k_norm, hd, c_.rms_eps, kt + h * hd);
    }
    const BatchToken& bt = rows_[t];
    rope(qt, c_.n_heads, c_.head_dim, c_.n_rot, bt.pos, c_.rope_freq_base, freq_factors_, neox_);
    rope(kt, c_.n_kv_heads, c_.head_dim, c_.n_rot, bt.pos, c_.rope_freq_base, freq_factors_, neox_);
    // K/V go to the cache before anyone attends, so every token, in this
    // batch or a later one, reads the same stored (possibly f16) values.
    const KvSeqView& sv = kv_.seqs[static_cast<std::size_t>(bt.seq)];
    std::byte* block = sv.blocks[static_cast<std::size_t>(bt.slot / g_.block_size)];
    write_kv(kt, vt, g_, layer, block, bt.slot % g_.block_size);
  });
}

void Model::ForwardPass::attend(int layer) {
  AttentionStatsCollector& collector = m_.stats_;
  if (stats_)
    collector.begin_layer(rows_, kv_, c_.n_heads,
                          by_head_ ? std::span<const std::size_t>{} : std::span<const std::size_t>(s_.att_group_starts));
  if (by_head_) {
    pool_.parallel_for(T_ * H_, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const std::size_t t = i / H_;
        const BatchToken& bt = rows_[t];
        const KvSeqView& sv = kv_.seqs[static_cast<std::size_t>(bt.seq)];
        attend_paged_head(s_.q.data() + t * Q_, c_.n_heads, static_cast<int>(i % H_), g_, layer, sv.blocks.data(),
                          sv.slot_positions.data(), static_cast<int>(sv.slot_positions.size()), bt.pos, scale_,
                          s_.attn.data() + t * Q_, s_.att_scores.data() + i * att_stride_,
                          stats_ ? collector.partial(t, static_cast<int>(i % H_)) : nullptr);
      }
    });
  } else {
    // Each K/V row is read once per group and head rather than once per
    // row; a cascade reads its shared blocks once for all its sequences.
    const std::size_t n_groups = s_.att_groups.size();
    s_.group_scratch.ensure(static_cast<std::size_t>(pool_.size()),
                            attend_group_scratch_floats(max_group_rows_, static_cast<int>(slot_room_), c_.head_dim));
    pool_.parallel_for(n_groups * H_, [&](std::size_t begin, std::size_t end) {
      ChunkBuffers::Claim claim = s_.group_scratch.claim();
      float* scratch = claim.buffer().data();
      for (std::size_t i = begin; i < end; ++i) {
        // Groups from both ends of the batch alternate, so that under a
        // causal mask every chunk gets a similar number of visible slots.
        const std::size_t j = i / H_;
        const std::size_t gi = j % 2 == 0 ? j / 2 : n_groups - 1 - j / 2;
        const int head = static_cast<int>(i % H_);
        const AttentionGroup& grp = s_.att_groups[gi];
        float* mass = stats_ ? collector.partial(gi, head) : nullptr;
        CascadeQuery queries[kMaxCascadeQueries];
        for (int r = 0; r < grp.n_rows; ++r) {
          const std::size_t t = grp.rows[r];
          const KvSeqView& sv = kv_.seqs[static_cast<std::size_t>(rows_[t].seq)];
          queries[r] = {s_.q.data() + t * Q_,         s_.attn.data() + t * Q_,
                        sv.blocks.data(),             sv.slot_positions.data(),
                        static_cast<int>(sv.slot_positions.size()), rows_[t].pos, mass};
        }
        attend_paged_head_cascade(queries, grp.n_rows, grp.shared_slots, c_.n_heads, head, g_, layer, scale_,
                                  scratch);
      }
    });
  }
  if (stats_) collector.end_layer(kv_, pool_);
}

void Model::ForwardPass::feed_forward(const LayerWeights& w) {
  // SwiGLU, its input the attention output added to the residual.
  auto ffn_norm = [&](std::size_t t) {
    add_in_place(x_ + t * E_, xn_ + t * E_, E_);
    rmsnorm(x_ + t * E_, w.ffn_norm, c_.n_embd, c_.rms_eps, xn_ + t * E_);
  };
  const int n_rows = static_cast<int>(T_);
  const MatmulOutput gate_up[] = {{&w.w_gate, s_.ffn_gate.data()}, {&w.w_up, s_.ffn_up.data()}};
  matmul_shared_input(gate_up, xn_, n_rows, pool_, RowPrep(ffn_norm));
  auto swiglu = [&](std::size_t t) {
    silu_mul(s_.ffn_gate.data() + t * F_, s_.ffn_up.data() + t * F_, static_cast<int>(F_));
  };
  matmul(w.w_down, s_.ffn_gate.data(), n_rows, xn_, pool_, RowPrep(swiglu));
  ffn_out_pending_ = true;
}

bool Model::ForwardPass::enter_probe_layer(std::span<float> probe_deviation, std::span<float> probe_residual) {
  const int layer = batch_.probe_layer;
  // The probes read, and the resumed tokens join, a settled residual stream.
  if (ffn_out_pending_) per_row([&](std::size_t t) { settle_row(t); });
  embed_pending_ = ffn_out_pending_ = false;  // the rows from here on are settled
  // The probes need only their V here: measured, they leave before the rows
  // that go on compute their Q, K and V.
  if (batch_.n_probes() > 0) {
    m_.measure_probes(m_.weights_.layers[static_cast<std::size_t>(layer)], layer, rows_, kv_, probe_rank_,
                      probe_deviation, pool_);
    if (!probe_residual.empty())
      for (std::size_t t = 0; t < T_; ++t)
        if (rows_[t].probe)
          std::copy_n(x_ + t * E_, E_, probe_residual.data() + static_cast<std::size_t>(probe_rank_[t]) * E_);
  }
  T_ = m_.enter_probe_layer(batch_, rows_);
  if (T_ == 0) return false;  // probes only: nothing more to compute
  x_ = s_.x.data();
  rows_ = s_.rows;
  arrange_attention();
  return true;
}

void Model::ForwardPass::head(std::span<float> logits) {
  if (stats_) count_attention_queries(rows_, kv_);
  const std::size_t n_out = static_cast<std::size_t>(batch_.n_outputs());
  if (n_out == 0) return;
  grow(s_.out_rows, n_out * E_);  // [n_out][E]
  s_.out_at.clear();              // the row of each output
  for (std::size_t t = 0; t < T_; ++t)
    if (rows_[t].want_logits) s_.out_at.push_back(t);
  // Only the rows that want logits are read again, so only they are settled.
  auto output_norm = [&](std::size_t row) {
    const std::size_t t = s_.out_at[row];
    settle_row(t);
    rmsnorm(x_ + t * E_, m_.weights_.output_norm, c_.n_embd, c_.rms_eps, s_.out_rows.data() + row * E_);
  };
  matmul(m_.weights_.output, s_.out_rows.data(), static_cast<int>(n_out), logits.data(), pool_,
         RowPrep(output_norm));
}

Status Model::forward(const Batch& batch, const KvView& kv, std::span<float> logits, ThreadPool& pool,
                      std::span<float> probe_deviation, std::span<float> probe_residual) {
  if (auto ok = check_batch(batch, kv, logits.size(), probe_deviation.size(), probe_residual.size()); !ok) return ok;
  if (batch.empty()) return {};
  ForwardPass pass(*this, batch, kv, pool);
  if (batch.n_probes() == 0 && batch.n_resumed() == 0) {
    pass.run_layers(0, config_.n_layers);
  } else {
    pass.run_layers(0, batch.probe_layer);
    if (!pass.enter_probe_layer(probe_deviation, probe_residual)) return {};
    pass.run_layers(batch.probe_layer, config_.n_layers);
  }
  pass.head(logits);
  return {};
}

void Model::measure_probes(const LayerWeights& w, int layer, std::span<const BatchToken> rows, const KvView& kv,
                           std::span<const int32_t> probe_rank, std::span<float> probe_deviation, ThreadPool& pool) {
  const ModelConfig& c = config_;
  const KvGeometry& g = kv.geometry;
  const std::size_t E = static_cast<std::size_t>(c.n_embd);
  const std::size_t KV = static_cast<std::size_t>(c.n_kv_heads * c.head_dim);
  // The probes' normed inputs, gathered in batch order (probe_rank), so that
  // one V projection covers them all; each row's arithmetic is the one it
  // would get beside the other rows.
  std::vector<std::size_t> at;  // batch row of each probe
  for (std::size_t t = 0; t < rows.size(); ++t)
    if (rows[t].probe) at.push_back(t);
  const std::size_t n = at.size();
  grow(s_.probe_in, n * E);
  grow(s_.probe_v, n * KV);
  pool.parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t r = static_cast<std::size_t>(probe_rank[at[i]]);
      rmsnorm(s_.x.data() + at[i] * E, w.attn_norm, c.n_embd, c.rms_eps, s_.probe_in.data() + r * E);
    }
  });
  matmul(w.wv, s_.probe_in.data(), static_cast<int>(n), s_.probe_v.data(), pool);
  pool.parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const BatchToken& bt = rows[at[i]];
      const std::size_t r = static_cast<std::size_t>(probe_rank[at[i]]);
      float* vt = s_.probe_v.data() + r * KV;
      if (w.bv != nullptr) add_bias(vt, w.bv, static_cast<int>(KV));
      const std::byte* block = kv.seqs[static_cast<std::size_t>(bt.seq)].blocks[static_cast<std::size_t>(bt.slot / g.block_size)];
      probe_deviation[r] = static_cast<float>(v_deviation(vt, g, layer, block, bt.slot % g.block_size));
    }
  });
}

std::size_t Model::enter_probe_layer(const Batch& batch, std::span<const BatchToken> rows) {
  const std::size_t E = static_cast<std::size_t>(config_.n_embd);
  std::vector<BatchToken> kept;
  kept.reserve(batch.tokens.size());
  grow(s_.x_next, batch.tokens.size() * E);
  // `rows` are the batch's tokens but the resumed ones, in batch order.
  std::size_t row = 0, resumed = 0;
  for (const BatchToken& t : batch.tokens) {
    const float* from = nullptr;
    if (t.resumed) {
      from = batch.resume_residual.data() + resumed++ * E;
    } else {
      const std::size_t at = row++;
      if (rows[at].probe) continue;
      from = s_.x.data() + at * E;
    }
    std::copy_n(from, E, s_.x_next.data() + kept.size() * E);
    kept.push_back(t);
  }
  // Only the residual moves on: the layer is computed after the move.
  std::swap(s_.x, s_.x_next);
  s_.rows = std::move(kept);
  return s_.rows.size();
}

}  // namespace clm
