// The scheduler's side of blend (reuse mode `blend`): once a sequence's
// first pass has measured every copied token, the most deviant join the
// tokens to compute and the second pass begins.
#include <algorithm>

#include "engine/blend_selection.h"
#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"

namespace clm {

void Scheduler::take_probe_results(const std::vector<ProbeRow>& probes, std::span<const float> deviation,
                                   std::span<const float> residual) {
  const std::size_t n_embd = static_cast<std::size_t>(model_.config().n_embd);
  std::vector<Sequence*> measured;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    Sequence& s = *probes[i].seq;
    const auto at = static_cast<std::size_t>(probes[i].pos - s.probe_region.begin);
    s.deviation[at] = deviation[i];
    std::copy_n(residual.begin() + static_cast<std::ptrdiff_t>(i * n_embd), n_embd,
                s.probe_residual.begin() + static_cast<std::ptrdiff_t>(at * n_embd));
    if (measured.empty() || measured.back() != &s) measured.push_back(&s);
  }
  uint64_t recomputed = 0;
  for (Sequence* sp : measured) {
    Sequence& s = *sp;
    if (s.finished || s.probing() || !s.blend_pending()) continue;
    // The pass is complete: pick among the copied tokens.
    std::vector<int32_t> positions;
    std::vector<float> dev;
    for (const PromptRange& r : s.copied)
      for (int32_t pos = r.begin; pos < r.end; ++pos) {
        positions.push_back(pos);
        dev.push_back(s.deviation[static_cast<std::size_t>(pos - s.probe_region.begin)]);
      }
    std::vector<int32_t> chosen = select_for_recompute(dev, s.blend_ratio, s.blend_adaptive);
    for (int32_t& i : chosen) i = positions[static_cast<std::size_t>(i)];
    s.compute = add_positions(s.compute, chosen);
    s.compute_range = 0;
    s.compute_at = s.compute.empty() ? 0 : s.compute.front().begin;
    s.reuse.shift -= static_cast<int>(chosen.size());
    s.reuse.recomputed += static_cast<int>(chosen.size());
    set_source(s.reuse_map, chosen, TokenSource::Recomputed);
    s.blend_selected = true;
    cache_.count_recomputed_copies(static_cast<int>(chosen.size()));
    s.deviation = {};
    recomputed += chosen.size();
  }
  std::lock_guard lock(mu_);
  stats_.blend_probed_tokens += probes.size();
  stats_.blend_recomputed_tokens += recomputed;
}

}  // namespace clm
