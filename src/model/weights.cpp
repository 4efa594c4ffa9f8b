#include "model/weights.h"

#include <algorithm>
#include <string>
#include <thread>

#include "kernels/float_panels.h"
#include "util/release_pages.h"
#include "kernels/quantize.h"

namespace clm {

namespace {

std::string shape_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

class Binder {
 public:
  explicit Binder(const GgufFile& file) : file_(file) {}

  // A matrix of `rows` outputs by `cols` inputs (ggml dims [cols, rows]).
  Result<WeightMatrix> matrix(const std::string& name, int cols, int rows) {
    const GgufTensorInfo* t = file_.tensor(name);
    if (t == nullptr) return fail("model: missing tensor " + name);
    if (t->dims.size() != 2 || t->dims[0] != static_cast<uint64_t>(cols) || t->dims[1] != static_cast<uint64_t>(rows))
      return fail("model: tensor " + name + " has shape " + shape_string(t->dims) + ", expected [" +
                  std::to_string(cols) + ", " + std::to_string(rows) + "]");
    const auto info = weight_type_info(static_cast<uint32_t>(t->type));
    if (!info || !info->supported)
      return fail("model: tensor " + name + " has type " + std::string(weight_type_name(t->type)) +
                  ", which this engine cannot compute with (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
    if (static_cast<std::size_t>(cols) % info->block_elems != 0)
      return fail("model: tensor " + name + " has " + std::to_string(cols) + " columns, not a multiple of the " +
                  std::to_string(info->block_elems) + "-element blocks of " + std::string(info->name));
    return WeightMatrix{t->type, t->data, rows, cols, row_bytes(t->type, static_cast<std::size_t>(cols))};
  }

  // A vector of n values, converted to f32 and kept in `owned`.
  Result<const float*> vector(const std::string& name, int n, std::vector<std::vector<float>>& owned) {
    const GgufTensorInfo* t = file_.tensor(name);
    if (t == nullptr) return fail("model: missing tensor " + name);
    if (t->dims.size() != 1 || t->dims[0] != static_cast<uint64_t>(n))
      return fail("model: tensor " + name + " has shape " + shape_string(t->dims) + ", expected [" +
                  std::to_string(n) + "]");
    const auto info = weight_type_info(static_cast<uint32_t>(t->type));
    if (!info || !info->supported || static_cast<std::size_t>(n) % info->block_elems != 0)
      return fail("model: tensor " + name + " has unsupported type " + std::string(weight_type_name(t->type)));
    std::vector<float>& v = owned.emplace_back(static_cast<std::size_t>(n));
    dequantize_row(t->type, t->data, v.data(), v.size());
    return v.data();
  }

 private:
  const GgufFile& file_;
};

// Rows [first, first + count) of w as a matrix of their own. Valid for every
// weight type because a matrix is stored row after row, each row exactly
// row_bytes long and made of whole quantization blocks (cols is a multiple of
// the block size, checked by Binder::matrix): a run of rows is therefore a
// complete matrix in the same format, starting first * row_bytes further on.
// The fused matrices need neither a copy nor a kernel of their own.
WeightMatrix row_range(const WeightMatrix& w, int first, int count) {
  return WeightMatrix{w.type, w.data + static_cast<std::size_t>(first) * w.row_bytes, count, w.cols, w.row_bytes};
}

// Gives every F16 / BF16 matrix that matmul multiplies its panel copy, all
// in w.panels. Each matrix is packed by all the cores: a 1B F16 model has
// 2 GiB of them, and loading should stay a matter of reading the file.
Status pack_float_matrices(ModelWeights& w, bool release_file_bytes) {
  std::vector<WeightMatrix*> todo;
  const auto consider = [&](WeightMatrix& m) {
    if (uses_panels(m.type)) todo.push_back(&m);
  };
  consider(w.output);
  for (LayerWeights& l : w.layers)
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) consider(*m);
  // Each matrix's panels start on a cache line.
  const auto bytes_of = [](const WeightMatrix& m) {
    const std::size_t b = panels_bytes(m.type, static_cast<std::size_t>(m.rows), static_cast<std::size_t>(m.cols));
    return (b + 63) / 64 * 64;
  };
  std::size_t total = 0;
  for (const WeightMatrix* m : todo) total += bytes_of(*m);
  auto region = HugePageRegion::allocate(total);
  if (!region) return fail("model: F16/BF16 weight panels: " + region.error().message);
  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::size_t offset = 0;
  for (WeightMatrix* m : todo) {
    pack_panels_parallel(*m, region->data() + offset, threads);
    m->panels = region->data() + offset;
    // The panel region is committed as it is written, so giving each
    // matrix's source back now keeps the load's peak near one copy.
    if (release_file_bytes && m->data != w.token_embd.data)
      release_pages(m->data, static_cast<std::size_t>(m->rows) * m->row_bytes);
    offset += bytes_of(*m);
  }
  if (auto ro = region->make_read_only(); !ro) return ro;
  w.panels = std::move(*region);
  return {};
}
}  // namespace

Result<ModelWeights> bind_weights(const GgufFile& file, const ModelConfig& c, bool release_packed_file_bytes) {
  ModelWeights w;
  // Pointers into `owned` stay valid as it grows: a moved std::vector keeps its buffer.
  Binder b(file);
  const int q_dim = c.n_heads * c.head_dim;
  const int kv_dim = c.n_kv_heads * c.head_dim;

#define CLM_BIND(dst, expr)                              \
  do {                                                   \
    auto r_ = (expr);                                    \
    if (!r_) return std::unexpected(r_.error());         \
    dst = *r_;                                           \
  } while (0)

  CLM_BIND(w.token_embd, b.matrix("token_embd.weight", c.n_embd, c.n_vocab));
  CLM_BIND(w.output_norm, b.vector("output_norm.weight", c.n_embd, w.owned));
  if (c.tied_output) {
    w.output = w.token_embd;
  } else {
    CLM_BIND(w.output, b.matrix("output.weight", c.n_embd, c.n_vocab));
  }
  w.layers.resize(static_cast<std::size_t>(c.n_layers));
  for (int i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers[static_cast<std::size_t>(i)];
    const std::string p = "blk." + std::to_string(i) + ".";
    CLM_BIND(l.attn_norm, b.vector(p + "attn_norm.weight", c.n_embd, w.owned));
    if (c.fused_qkv) {
      WeightMatrix qkv{};
      CLM_BIND(qkv, b.matrix(p + "attn_qkv.weight", c.n_embd, q_dim + 2 * kv_dim));
      l.wq = row_range(qkv, 0, q_dim);
      l.wk = row_range(qkv, q_dim, kv_dim);
      l.wv = row_range(qkv, q_dim + kv_dim, kv_dim);
    } else {
      CLM_BIND(l.wq, b.matrix(p + "attn_q.weight", c.n_embd, q_dim));
      CLM_BIND(l.wk, b.matrix(p + "attn_k.weight", c.n_embd, kv_dim));
      CLM_BIND(l.wv, b.matrix(p + "attn_v.weight", c.n_embd, kv_dim));
    }
    CLM_BIND(l.wo, b.matrix(p + "attn_output.weight", q_dim, c.n_embd));
    if (c.qkv_bias) {
      CLM_BIND(l.bq, b.vector(p + "attn_q.bias", q_dim, w.owned));
      CLM_BIND(l.bk, b.vector(p + "attn_k.bias", kv_dim, w.owned));
      CLM_BIND(l.bv, b.vector(p + "attn_v.bias", kv_dim, w.owned));
    }
    if (c.qk_norm) {
      CLM_BIND(l.q_norm, b.vector(p + "attn_q_norm.weight", c.head_dim, w.owned));
      CLM_BIND(l.k_norm, b.vector(p + "attn_k_norm.weight", c.head_dim, w.owned));
    }
    CLM_BIND(l.ffn_norm, b.vector(p + "ffn_norm.weight", c.n_embd, w.owned));
    if (c.fused_gate_up) {
      // SwiGLU halves as llama.cpp's phi3 graph splits them: gate, then up.
      WeightMatrix gate_up{};
      CLM_BIND(gate_up, b.matrix(p + "ffn_up.weight", c.n_embd, 2 * c.n_ff));
      l.w_gate = row_range(gate_up, 0, c.n_ff);
      l.w_up = row_range(gate_up, c.n_ff, c.n_ff);
    } else {
      CLM_BIND(l.w_gate, b.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff));
      CLM_BIND(l.w_up, b.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff));
    }
    CLM_BIND(l.w_down, b.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd));
  }
#undef CLM_BIND
  if (auto packed = pack_float_matrices(w, release_packed_file_bytes); !packed)
    return std::unexpected(packed.error());
  return w;
}

}  // namespace clm
