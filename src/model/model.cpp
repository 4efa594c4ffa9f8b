#include "model/model.h"

#include <string>

#include "model/fingerprint.h"

namespace clm {

namespace {

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

}  // namespace clm
