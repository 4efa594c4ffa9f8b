#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/quantize.h"
#include "model/attention_stats.h"
#include "model/fingerprint.h"

namespace clm {

namespace {

void grow(std::vector<float>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
}

void add_in_place(float* x, const float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
}

// Reads every page of the weights once, reporting progress, so that page
// faults happen at load time and not inside the first request.
void prefault(std::span<const std::byte> bytes, const std::function<void(float)>& on_progress) {
  constexpr std::size_t kPage = 4096;
  constexpr std::size_t kReportEvery = 64u << 20;
  volatile unsigned char sink = 0;
  for (std::size_t off = 0; off < bytes.size(); off += kPage) {
    sink = static_cast<unsigned char>(sink + static_cast<unsigned char>(bytes[off]));
    if (on_progress && off % kReportEvery == 0) on_progress(static_cast<float>(off) / static_cast<float>(bytes.size()));
  }
  if (on_progress) on_progress(1.0f);
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const LoadOptions& options) {
  auto file = GgufFile::open(path, options.load,
                            options.load == FileLoad::Copy ? options.on_progress : std::function<void(float)>{});
  if (!file) return fail(file.error().message);
  // Before packing, which may give pages back and would fault them in again.
  if (options.load == FileLoad::Map && options.prefault)
    prefault(file->bytes().subspan(file->data_offset()), options.on_progress);
  auto config = read_model_config(*file);
  if (!config) return fail(path + ": " + config.error().message);
  std::optional<uint64_t> fingerprint;
  if (options.release_packed_file_bytes)
    fingerprint = options.known_fingerprint ? *options.known_fingerprint : model_fingerprint(*file);
  auto weights = bind_weights(*file, *config, options.release_packed_file_bytes);
  if (!weights) return fail(path + ": " + weights.error().message);
  auto tokenizer = Tokenizer::from_gguf(*file);
  if (!tokenizer) return fail(path + ": " + tokenizer.error().message);
  if ((*tokenizer)->n_vocab() > config->n_vocab)
    return fail(path + ": tokenizer has " + std::to_string((*tokenizer)->n_vocab()) +
                " tokens but the embedding only " + std::to_string(config->n_vocab));

  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(*file);
  m->config_ = std::move(*config);
  m->weights_ = std::move(*weights);
  m->tokenizer_ = std::move(*tokenizer);
  m->fingerprint_ = fingerprint;
  return m;
}

uint64_t Model::weight_bytes() const {
  uint64_t total = 0;
  for (const auto& t : file_.tensors()) total += t.n_bytes;
  return total;
}

Status Model::check_batch(const Batch& batch, const KvView& kv, std::size_t logits_size, std::size_t deviation_size,
                          std::size_t residual_size) const {
  const KvGeometry& g = kv.geometry;
  if (g.n_layers != config_.n_layers || g.n_kv_heads != config_.n_kv_heads || g.head_dim != config_.head_dim)
    return fail("forward: KV geometry does not match the model");
  for (std::size_t i = 0; i < batch.tokens.size(); ++i) {
    const BatchToken& t = batch.tokens[i];
    if (t.token < 0 || t.token >= config_.n_vocab)
      return fail("forward: token id " + std::to_string(t.token) + " out of range");
    if (t.seq < 0 || static_cast<std::size_t>(t.seq) >= kv.seqs.size())
      return fail("forward: batch token " + std::to_string(i) + " names unknown sequence");
    const KvSeqView& s = kv.seqs[static_cast<std::size_t>(t.seq)];
    if (t.slot < 0 || static_cast<std::size_t>(t.slot) >= s.slot_positions.size() ||
        static_cast<std::size_t>(t.slot / g.block_size) >= s.blocks.size())
      return fail("forward: batch token " + std::to_string(i) + " has slot outside its sequence");
    if (s.slot_positions[static_cast<std::size_t>(t.slot)] != t.pos)
      return fail("forward: slot position does not match token position");
    if (t.probe && t.want_logits) return fail("forward: a probe token cannot return logits");
    if (t.probe && t.resumed) return fail("forward: a token cannot be both a probe and resumed");
    // A probe stops part way and a resumed token starts part way, so their
    // attention would count in some layers only.
    if ((t.probe || t.resumed) && !s.slot_mass.empty())
      return fail("forward: a sequence that collects attention statistics cannot hold probe or resumed tokens");
  }
  for (std::size_t i = 0; i < kv.seqs.size(); ++i) {
    const KvSeqView& s = kv.seqs[i];
    const bool mass = !s.slot_mass.empty(), queries = !s.slot_queries.empty();
    if (mass != queries || (mass && (s.slot_mass.size() != s.slot_positions.size() ||
                                     s.slot_queries.size() != s.slot_positions.size())))
      return fail("forward: sequence " + std::to_string(i) +
                  "'s attention statistics need slot_mass and slot_queries, each as long as its slots");
  }
  const std::size_t n_probes = static_cast<std::size_t>(batch.n_probes());
  const std::size_t n_resumed = static_cast<std::size_t>(batch.n_resumed());
  const std::size_t E = static_cast<std::size_t>(config_.n_embd);
  if ((n_probes > 0 || n_resumed > 0) && (batch.probe_layer < 1 || batch.probe_layer >= config_.n_layers))
    return fail("forward: probe layer " + std::to_string(batch.probe_layer) + " outside 1.." +
                std::to_string(config_.n_layers - 1));
  if (deviation_size < n_probes) return fail("forward: probe deviation buffer too small");
  if (residual_size != 0 && residual_size < n_probes * E) return fail("forward: probe residual buffer too small");
  if (batch.resume_residual.size() != n_resumed * E)
    return fail("forward: resumed tokens need one residual of n_embd floats each");
  const std::size_t need = static_cast<std::size_t>(batch.n_outputs()) * static_cast<std::size_t>(config_.n_vocab);
  if (logits_size < need) return fail("forward: logits buffer too small");
  return {};
}

Status Model::forward(const Batch& batch, const KvView& kv, std::span<float> logits, ThreadPool& pool,
                      std::span<float> probe_deviation, std::span<float> probe_residual) {
  if (auto ok = check_batch(batch, kv, logits.size(), probe_deviation.size(), probe_residual.size()); !ok) return ok;
  if (batch.empty()) return {};
  const ModelConfig& c = config_;
  const KvGeometry& g = kv.geometry;
  const std::size_t E = static_cast<std::size_t>(c.n_embd);
  const std::size_t Q = static_cast<std::size_t>(c.n_heads * c.head_dim);
  const std::size_t KV = static_cast<std::size_t>(c.n_kv_heads * c.head_dim);
  const std::size_t F = static_cast<std::size_t>(c.n_ff);
  const std::size_t H = static_cast<std::size_t>(c.n_heads);
  std::size_t max_slots = 0;
  for (const auto& s : kv.seqs) max_slots = std::max(max_slots, s.slot_positions.size());
  // The attention scratch is sized for whole blocks: a sequence gains a slot
  // every decode step, and its scratch then grows only when it takes a new
  // block, not at every step.
  const std::size_t bs = static_cast<std::size_t>(std::max(1, g.block_size));
  const std::size_t slot_room = (max_slots + bs - 1) / bs * bs;

  // The rows being computed, in batch order: every token but the resumed
  // ones, until at the probe layer the probes leave and the resumed tokens
  // join. Each row's arithmetic depends only on its own inputs and the
  // cache, so dropping or adding rows changes nothing for the others.
  const bool has_probes = batch.n_probes() > 0;
  const bool has_resumed = batch.n_resumed() > 0;
  std::span<const BatchToken> rows = batch.tokens;
  if (has_resumed) {
    s_.rows.clear();
    for (const BatchToken& t : batch.tokens)
      if (!t.resumed) s_.rows.push_back(t);
    rows = s_.rows;
  }
  std::size_t T = rows.size();
  const bool stats = any_attention_stats(kv);

  const std::size_t n_all = batch.tokens.size();  // rows at most, at any layer
  grow(s_.x, n_all * E);        // [T][E] residual stream
  grow(s_.xn, n_all * E);       // [T][E] normed input / sublayer output
  grow(s_.q, n_all * Q);        // [T][n_heads][head_dim]
  grow(s_.k, n_all * KV);       // [T][n_kv_heads][head_dim]
  grow(s_.v, n_all * KV);       // [T][n_kv_heads][head_dim]
  grow(s_.attn, n_all * Q);     // [T][n_heads][head_dim] attention output
  grow(s_.ffn_gate, n_all * F); // [T][F]
  grow(s_.ffn_up, n_all * F);   // [T][F]
  const std::size_t att_stride = slot_room + static_cast<std::size_t>(c.head_dim);
  bool by_head = false;
  int max_group_rows = 1;  // the largest attention group's queries
  // A few tokens (decode) are too few to keep every thread busy, so their
  // attention is split by head too; heads are computed alike either way.
  // Otherwise consecutive tokens of one sequence attend as a group.
  auto arrange_attention = [&] {
    by_head = T < 4 * static_cast<std::size_t>(pool.size());
    if (by_head) {
      grow(s_.att_scores, T * H * att_stride);  // [T*H][slots + head_dim] attention scratch
    } else {
      // Cascades as large as keep at least 4 work items (group, head) per
      // thread: fewer passes over the shared prefix, every thread still busy.
      const std::size_t per_cascade = T * H / (4 * static_cast<std::size_t>(pool.size()));
      const int max_cascade = static_cast<int>(
          std::clamp<std::size_t>(per_cascade, kMaxGroupQueries, kMaxCascadeQueries));
      arrange_attention_groups(rows.first(T), kv, /*cascades=*/!stats, s_.att_groups, max_cascade);
      max_group_rows = 1;
      for (const AttentionGroup& grp : s_.att_groups) max_group_rows = std::max(max_group_rows, grp.n_rows);
      s_.att_group_starts.clear();
      if (stats) {  // the collector's units: each group's first row, then T
        for (const AttentionGroup& grp : s_.att_groups) s_.att_group_starts.push_back(grp.rows[0]);
        s_.att_group_starts.push_back(T);
      }
    }
  };
  arrange_attention();
  float* x = s_.x.data();
  float* xn = s_.xn.data();

  // The residual stream's pending steps, done by whichever loop next reads
  // the row (the loops per layer are few, so each hand-off saved counts):
  // the embedding rows are looked up in the first layer's norm loop, and the
  // feed-forward output is added in the next layer's norm loop (or the
  // output head's).
  bool embed_pending = true;    // x rows not yet looked up
  bool ffn_out_pending = false;  // xn holds the last sublayer's output, not yet added to x
  auto settle_row = [&](std::size_t t) {
    if (embed_pending) {
      const WeightMatrix& emb = weights_.token_embd;
      dequantize_row(emb.type, emb.data + static_cast<std::size_t>(rows[t].token) * emb.row_bytes, x + t * E, E);
    } else if (ffn_out_pending) {
      add_in_place(x + t * E, xn + t * E, E);
    }
  };

  // The row-wise steps between matmuls, spread over the pool by token.
  auto per_token = [&](auto&& fn) {
    pool.parallel_for(T, [&](std::size_t begin, std::size_t end) {
      for (std::size_t t = begin; t < end; ++t) fn(t);
    });
  };
  const bool neox = c.rope_layout == RopeLayout::NeoX;
  const float* freq_factors = c.rope_freq_factors.empty() ? nullptr : c.rope_freq_factors.data();
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  // probe_rank[t]: where batch row t's deviation goes (rows are still in
  // batch order when the probes are measured).
  std::vector<int32_t> probe_rank;
  if (has_probes) {
    probe_rank.resize(T, -1);
    int32_t next = 0;
    for (std::size_t t = 0; t < T; ++t)
      if (rows[t].probe) probe_rank[t] = next++;
  }

  for (int layer = 0; layer < c.n_layers; ++layer) {
    const LayerWeights& w = weights_.layers[static_cast<std::size_t>(layer)];
    if (layer < batch.probe_layer && T == 0) continue;  // resumed tokens only: they start later
    if (layer == batch.probe_layer && (has_probes || has_resumed)) {
      // The probes read, and the resumed tokens join, a settled residual stream.
      if (ffn_out_pending) per_token(settle_row);
      embed_pending = ffn_out_pending = false;  // the rows from here on are settled
      // The probes need only their V here: measured, they leave before the
      // rows that go on compute their Q, K and V.
      if (has_probes) {
        measure_probes(w, layer, rows, kv, probe_rank, probe_deviation, pool);
        if (!probe_residual.empty())
          for (std::size_t t = 0; t < T; ++t)
            if (rows[t].probe)
              std::copy_n(x + t * E, E, probe_residual.data() + static_cast<std::size_t>(probe_rank[t]) * E);
      }
      T = enter_probe_layer(batch, rows);
      if (T == 0) return {};  // probes only: nothing more to compute
      x = s_.x.data();
      rows = s_.rows;
      arrange_attention();
    }
    const int n = static_cast<int>(T);

    // Attention sublayer.
    auto attn_norm = [&](std::size_t t) {
      settle_row(t);
      rmsnorm(x + t * E, w.attn_norm, c.n_embd, c.rms_eps, xn + t * E);
    };
    const MatmulOutput qkv[] = {{&w.wq, s_.q.data()}, {&w.wk, s_.k.data()}, {&w.wv, s_.v.data()}};
    matmul_shared_input(qkv, xn, n, pool, RowPrep(attn_norm));
    embed_pending = ffn_out_pending = false;
    per_token([&](std::size_t t) {
      float* qt = s_.q.data() + t * Q;
      float* kt = s_.k.data() + t * KV;
      float* vt = s_.v.data() + t * KV;
      if (w.bq != nullptr) {
        add_bias(qt, w.bq, static_cast<int>(Q));
        add_bias(kt, w.bk, static_cast<int>(KV));
        add_bias(vt, w.bv, static_cast<int>(KV));
      }
      if (w.q_norm != nullptr) {  // qwen3: every head normed on its own, before RoPE
        const int hd = c.head_dim;
        for (int h = 0; h < c.n_heads; ++h) rmsnorm(qt + h * hd, w.q_norm, hd, c.rms_eps, qt + h * hd);
        for (int h = 0; h < c.n_kv_heads; ++h) rmsnorm(kt + h * hd, w.k_norm, hd, c.rms_eps, kt + h * hd);
      }
      const BatchToken& bt = rows[t];
      rope(qt, c.n_heads, c.head_dim, c.n_rot, bt.pos, c.rope_freq_base, freq_factors, neox);
      rope(kt, c.n_kv_heads, c.head_dim, c.n_rot, bt.pos, c.rope_freq_base, freq_factors, neox);
      // K/V go to the cache before anyone attends, so every token, in this
      // batch or a later one, reads the same stored (possibly f16) values.
      const KvSeqView& sv = kv.seqs[static_cast<std::size_t>(bt.seq)];
      std::byte* block = sv.blocks[static_cast<std::size_t>(bt.slot / g.block_size)];
      write_kv(kt, vt, g, layer, block, bt.slot % g.block_size);
    });
    const int n_rows = static_cast<int>(T);
    if (stats)
      stats_.begin_layer(rows, kv, c.n_heads,
                         by_head ? std::span<const std::size_t>{} : std::span<const std::size_t>(s_.att_group_starts));
    if (by_head) {
      pool.parallel_for(T * H, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          const std::size_t t = i / H;
          const BatchToken& bt = rows[t];
          const KvSeqView& sv = kv.seqs[static_cast<std::size_t>(bt.seq)];
          attend_paged_head(s_.q.data() + t * Q, c.n_heads, static_cast<int>(i % H), g, layer, sv.blocks.data(),
                            sv.slot_positions.data(), static_cast<int>(sv.slot_positions.size()), bt.pos, scale,
                            s_.attn.data() + t * Q, s_.att_scores.data() + i * att_stride,
                            stats ? stats_.partial(t, static_cast<int>(i % H)) : nullptr);
        }
      });
    } else {
      // Each K/V row is read once per group and head rather than once per
      // token; a cascade reads its shared blocks once for all its sequences.
      const std::size_t n_groups = s_.att_groups.size();
      s_.group_scratch.ensure(static_cast<std::size_t>(pool.size()),
                              attend_group_scratch_floats(max_group_rows, static_cast<int>(slot_room), c.head_dim));
      pool.parallel_for(n_groups * H, [&](std::size_t begin, std::size_t end) {
        ChunkBuffers::Claim claim = s_.group_scratch.claim();
        float* scratch = claim.buffer().data();
        for (std::size_t i = begin; i < end; ++i) {
          // Groups from both ends of the batch alternate, so that under a
          // causal mask every chunk gets a similar number of visible slots.
          const std::size_t j = i / H;
          const std::size_t gi = j % 2 == 0 ? j / 2 : n_groups - 1 - j / 2;
          const int head = static_cast<int>(i % H);
          const AttentionGroup& grp = s_.att_groups[gi];
          float* mass = stats ? stats_.partial(gi, head) : nullptr;
          CascadeQuery queries[kMaxCascadeQueries];
          for (int r = 0; r < grp.n_rows; ++r) {
            const std::size_t t = grp.rows[r];
            const KvSeqView& sv = kv.seqs[static_cast<std::size_t>(rows[t].seq)];
            queries[r] = {s_.q.data() + t * Q,          s_.attn.data() + t * Q,
                          sv.blocks.data(),             sv.slot_positions.data(),
                          static_cast<int>(sv.slot_positions.size()), rows[t].pos, mass};
          }
          attend_paged_head_cascade(queries, grp.n_rows, grp.shared_slots, c.n_heads, head, g, layer, scale,
                                    scratch);
        }
      });
    }
    if (stats) stats_.end_layer(kv, pool);
    matmul(w.wo, s_.attn.data(), n_rows, xn, pool);

    // Feed-forward sublayer (SwiGLU).
    auto ffn_norm = [&](std::size_t t) {
      add_in_place(x + t * E, xn + t * E, E);
      rmsnorm(x + t * E, w.ffn_norm, c.n_embd, c.rms_eps, xn + t * E);
    };
    const MatmulOutput gate_up[] = {{&w.w_gate, s_.ffn_gate.data()}, {&w.w_up, s_.ffn_up.data()}};
    matmul_shared_input(gate_up, xn, n_rows, pool, RowPrep(ffn_norm));
    auto swiglu = [&](std::size_t t) {
      silu_mul(s_.ffn_gate.data() + t * F, s_.ffn_up.data() + t * F, static_cast<int>(F));
    };
    matmul(w.w_down, s_.ffn_gate.data(), n_rows, xn, pool, RowPrep(swiglu));
    ffn_out_pending = true;
  }

  if (stats) count_attention_queries(rows, kv);

  // Output head, only for the rows that want logits.
  const std::size_t n_out = static_cast<std::size_t>(batch.n_outputs());
  if (n_out == 0) return {};
  grow(s_.out_rows, n_out * E);  // [n_out][E]
  s_.out_at.clear();             // the row of each output
  for (std::size_t t = 0; t < T; ++t)
    if (rows[t].want_logits) s_.out_at.push_back(t);
  // Only the rows that want logits are read again, so only they are settled.
  auto output_norm = [&](std::size_t row) {
    const std::size_t t = s_.out_at[row];
    settle_row(t);
    rmsnorm(x + t * E, weights_.output_norm, c.n_embd, c.rms_eps, s_.out_rows.data() + row * E);
  };
  matmul(weights_.output, s_.out_rows.data(), static_cast<int>(n_out), logits.data(), pool, RowPrep(output_norm));
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
