#include "engine/evict_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <set>

#include <re2/re2.h>

namespace clm {

std::string_view evict_kind_name(EvictKind k) {
  switch (k) {
    case EvictKind::Window: return "window";
    case EvictKind::SinksWindow: return "sinks-window";
    case EvictKind::H2O: return "h2o";
    case EvictKind::Attention: return "attention";
  }
  return "?";
}

std::optional<EvictKind> parse_evict_kind(std::string_view name) {
  for (EvictKind k : {EvictKind::Window, EvictKind::SinksWindow, EvictKind::H2O, EvictKind::Attention})
    if (evict_kind_name(k) == name) return k;
  return std::nullopt;
}

std::vector<std::string> default_protect_patterns() {
  return {
      R"([0-9]+(?:[.,:/-][0-9]+)*)",           // numbers: 42, 3.14, 12:30, 2024-05-01
      R"(\b[A-Za-z]+[-#]?[0-9][A-Za-z0-9-]*)",  // identifiers: ORD-1234, A7, sku#99x
      R"([a-z,;:] ([A-Z][a-z]+))",              // a capitalised word inside a sentence: a name
  };
}

std::string_view block_status_name(BlockStatus s) {
  switch (s) {
    case BlockStatus::Evictable: return "evictable";
    case BlockStatus::Candidate: return "candidate";
    case BlockStatus::Sink: return "sink";
    case BlockStatus::Recent: return "recent";
    case BlockStatus::Top: return "top";
    case BlockStatus::Protected: return "protected";
    case BlockStatus::Evicted: return "evicted";
  }
  return "?";
}

Result<EvictPolicy> EvictPolicy::create(EvictOptions o) {
  if (o.block_tokens < 1) return fail("evict: block_tokens must be at least 1");
  if (o.aggregate_every < 1) return fail("evict: aggregate_every must be at least 1");
  if (!(o.decay >= 0.0 && o.decay < 1.0)) return fail("evict: decay must be in [0, 1)");
  if (!(o.candidate_fraction >= 0.0)) return fail("evict: candidate_fraction must be at least 0");
  if (o.sink_blocks < 0) return fail("evict: sink_blocks must be at least 0");
  // The last block is still filling: it must stay, so the window covers it.
  if (o.recent_tokens < 1) return fail("evict: recent_tokens must be at least 1");
  if (!(o.top_share >= 0.0 && o.top_share <= 1.0)) return fail("evict: top_share must be in [0, 1]");
  if (o.top_history < 0) return fail("evict: top_history must be at least 0");
  if (!(o.protect_share >= 0.0 && o.protect_share <= 1.0)) return fail("evict: protect_share must be in [0, 1]");
  if (!(o.window_scale >= 0.0)) return fail("evict: window_scale must be at least 0");
  EvictPolicy p(o);
  for (const std::string& pattern : o.protect_patterns) {
    re2::RE2::Options ro;
    ro.set_log_errors(false);
    auto rule = std::make_unique<re2::RE2>(pattern, ro);
    if (!rule->ok()) return fail("evict: protect rule '" + pattern + "': " + rule->error());
    p.rules_.push_back(std::move(rule));
  }
  return p;
}

EvictPolicy::~EvictPolicy() = default;
EvictPolicy::EvictPolicy(EvictPolicy&&) noexcept = default;
EvictPolicy& EvictPolicy::operator=(EvictPolicy&&) noexcept = default;

int EvictPolicy::block_slots(int b) const { return std::min(o_.block_tokens, n_tokens() - b * o_.block_tokens); }

void EvictPolicy::append(std::span<const std::string> pieces) {
  for (const std::string& piece : pieces) {
    text_ += piece;
    token_end_.push_back(text_.size());
  }
  const int want = (n_tokens() + o_.block_tokens - 1) / o_.block_tokens;
  if (want > n_blocks()) blocks_.resize(static_cast<std::size_t>(want));
  refresh_candidates();
}

bool EvictPolicy::recent(int b) const {
  return (b + 1) * o_.block_tokens > n_tokens() - std::max(o_.recent_tokens, window_tokens_);
}

bool EvictPolicy::never_evicted(int b) const {
  const bool sink = b < o_.sink_blocks;
  switch (o_.kind) {
    case EvictKind::Window:
    case EvictKind::H2O: return recent(b);
    case EvictKind::SinksWindow: return sink || recent(b);
    case EvictKind::Attention: break;
  }
  const Block& k = blocks_[static_cast<std::size_t>(b)];
  return (k.protect && !k.yielded) || kept_for_other_reasons(b);
}

bool EvictPolicy::kept_for_other_reasons(int b) const {
  if (b < o_.sink_blocks || recent(b)) return true;
  for (const auto& top : tops_)
    if (std::find(top.begin(), top.end(), b) != top.end()) return true;
  return false;
}

void EvictPolicy::widen_window(int budget_tokens) {
  window_tokens_ = 0;
  if (o_.kind != EvictKind::Attention || o_.window_scale == 0.0 || n_tokens() == 0) return;
  const double budget = std::max(0, budget_tokens);
  const double forgotten = std::max(0.0, 1.0 - budget / n_tokens());
  // The blocks touching the last W tokens hold at most W + block_tokens - 1
  // of them: with the sinks, that must fit in the budget.
  const double room = budget - static_cast<double>(o_.sink_blocks + 1) * o_.block_tokens + 1.0;
  window_tokens_ = static_cast<int>(std::max(0.0, std::min(o_.window_scale * forgotten * budget, room)));
  if (window_tokens_ <= o_.recent_tokens) return;
  // The top blocks outside the sinks and the widened window yield, the
  // lowest-scored first, until what is kept for those reasons fits.
  auto held = [&] {
    int n = 0;
    for (int b = 0; b < n_blocks(); ++b)
      if (!blocks_[static_cast<std::size_t>(b)].evicted && kept_for_other_reasons(b)) n += block_slots(b);
    return n;
  };
  while (held() > budget_tokens) {
    int lowest = -1;
    for (const auto& top : tops_)
      for (int b : top)
        if (!blocks_[static_cast<std::size_t>(b)].evicted && b >= o_.sink_blocks && !recent(b) &&
            (lowest < 0 || order_key(b) < order_key(lowest)))
          lowest = b;
    if (lowest < 0) break;
    for (auto& top : tops_) std::erase(top, lowest);
  }
}

void EvictPolicy::yield_protection(int budget_tokens) {
  if (o_.kind != EvictKind::Attention) return;
  // The blocks kept only by protection, the most worth keeping first (a
  // block no aggregation has scored yet is the newest: first too), and
  // what the blocks kept for other reasons leave of the budget.
  std::vector<int> kept;
  int others = 0;
  for (int b = 0; b < n_blocks(); ++b) {
    Block& k = blocks_[static_cast<std::size_t>(b)];
    k.yielded = false;
    if (k.evicted) continue;
    if (kept_for_other_reasons(b))
      others += block_slots(b);
    else if (k.protect)
      kept.push_back(b);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](int a, int c) { return order_key(a) > order_key(c); });
  const double allowed = std::min(o_.protect_share * std::max(0, budget_tokens), static_cast<double>(budget_tokens - others));
  double used = 0.0;
  for (int b : kept) {
    used += block_slots(b);
    if (used > allowed) blocks_[static_cast<std::size_t>(b)].yielded = true;
  }
}

double EvictPolicy::order_key(int b) const {
  if (o_.kind == EvictKind::Window || o_.kind == EvictKind::SinksWindow) return b;  // the oldest first
  const Block& k = blocks_[static_cast<std::size_t>(b)];
  // A block no aggregation has seen yet goes after every scored one.
  return k.scored ? k.score : std::numeric_limits<double>::infinity();
}

BlockStatus EvictPolicy::status(int b) const {
  const Block& k = blocks_[static_cast<std::size_t>(b)];
  if (k.evicted) return BlockStatus::Evicted;
  if (never_evicted(b)) {
    if (b < o_.sink_blocks && o_.kind != EvictKind::Window && o_.kind != EvictKind::H2O) return BlockStatus::Sink;
    if (recent(b)) return BlockStatus::Recent;
    if (k.protect && !k.yielded) return BlockStatus::Protected;
    return BlockStatus::Top;
  }
  if (std::find(candidates_.begin(), candidates_.end(), b) != candidates_.end()) return BlockStatus::Candidate;
  return BlockStatus::Evictable;
}

std::vector<int> EvictPolicy::candidates() const { return candidates_; }

double EvictPolicy::score(int b) const { return blocks_[static_cast<std::size_t>(b)].score; }

void EvictPolicy::aggregate(std::span<float> mass, std::span<uint32_t> queries) {
  const std::size_t n_slots = std::min({mass.size(), queries.size(), static_cast<std::size_t>(n_tokens())});
  std::vector<std::pair<double, int>> now;  // this aggregation's normalised mass per block
  for (int b = 0; b < n_blocks(); ++b) {
    Block& k = blocks_[static_cast<std::size_t>(b)];
    const std::size_t first = static_cast<std::size_t>(b) * static_cast<std::size_t>(o_.block_tokens);
    const std::size_t end = std::min(first + static_cast<std::size_t>(o_.block_tokens), n_slots);
    if (k.evicted || first >= end) continue;
    double m = 0.0, q = 0.0;
    for (std::size_t s = first; s < end; ++s) {
      m += mass[s];
      q += queries[s];
    }
    if (o_.kind == EvictKind::H2O) {
      k.score += m;
      k.scored = true;
    } else if (o_.kind == EvictKind::Attention && q > 0.0) {
      const double normalised = m / q;
      k.score = k.scored ? o_.decay * k.score + (1.0 - o_.decay) * normalised : normalised;
      k.scored = true;
      now.emplace_back(normalised, b);
    }
  }
  if (o_.kind == EvictKind::Attention && o_.top_history > 0) {
    // At least one block when there is a top share at all.
    const std::size_t n_top = now.empty() || o_.top_share == 0.0
                                  ? 0
                                  : std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(
                                                                 o_.top_share * static_cast<double>(now.size()))));
    std::partial_sort(now.begin(), now.begin() + static_cast<long>(std::min(n_top, now.size())), now.end(),
                      [](const auto& a, const auto& c) { return a.first > c.first || (a.first == c.first && a.second < c.second); });
    std::vector<int> top;
    for (std::size_t i = 0; i < n_top && i < now.size(); ++i) top.push_back(now[i].second);
    tops_.push_back(std::move(top));
    while (tops_.size() > static_cast<std::size_t>(o_.top_history)) tops_.pop_front();
  }
  if (o_.kind == EvictKind::Attention) refresh_protection();
  std::fill(mass.begin(), mass.end(), 0.0f);
  std::fill(queries.begin(), queries.end(), 0u);
  aggregated_at_ = n_tokens();
  refresh_candidates();
}

void EvictPolicy::refresh_protection() {
  // The whole text each time: a match may grow with later tokens.
  for (Block& k : blocks_) k.protect = k.yielded = false;
  const re2::StringPiece text(text_);
  for (const auto& rule : rules_) {
    std::set<std::string_view> seen;  // this rule's matched texts so far
    const int groups = std::min(rule->NumberOfCapturingGroups(), 1);
    re2::StringPiece m[2];
    std::size_t at = 0;
    while (at <= text_.size() && rule->Match(text, at, text_.size(), re2::RE2::UNANCHORED, m, 1 + groups)) {
      const re2::StringPiece span = groups == 1 && m[1].data() != nullptr ? m[1] : m[0];
      const std::size_t begin = static_cast<std::size_t>(span.data() - text_.data());
      const std::size_t end = begin + span.size();
      const bool repeat = o_.protect_first_only && !seen.insert(std::string_view(span.data(), span.size())).second;
      if (end > begin && !repeat) {
        // Tokens whose bytes overlap [begin, end).
        auto t = std::upper_bound(token_end_.begin(), token_end_.end(), begin);
        for (; t != token_end_.end(); ++t) {
          const std::size_t token = static_cast<std::size_t>(t - token_end_.begin());
          const std::size_t token_begin = token == 0 ? 0 : token_end_[token - 1];
          if (token_begin >= end) break;
          blocks_[token / static_cast<std::size_t>(o_.block_tokens)].protect = true;
        }
      }
      const std::size_t match_end = static_cast<std::size_t>(m[0].data() - text_.data()) + m[0].size();
      at = m[0].empty() ? match_end + 1 : match_end;
    }
  }
}

void EvictPolicy::refresh_candidates() {
  candidates_.clear();
  if (o_.kind == EvictKind::Window || o_.kind == EvictKind::SinksWindow) {
    // No statistics: every block that may go is a candidate, the oldest first.
    for (int b = 0; b < n_blocks(); ++b)
      if (!blocks_[static_cast<std::size_t>(b)].evicted && !never_evicted(b)) candidates_.push_back(b);
    return;
  }
  double sum = 0.0;
  int n = 0;
  for (const Block& k : blocks_)
    if (!k.evicted && k.scored) sum += k.score, ++n;
  if (n == 0) return;
  const double threshold = o_.candidate_fraction * sum / n;
  for (int b = 0; b < n_blocks(); ++b) {
    const Block& k = blocks_[static_cast<std::size_t>(b)];
    if (!k.evicted && k.scored && k.score < threshold && !never_evicted(b)) candidates_.push_back(b);
  }
  std::stable_sort(candidates_.begin(), candidates_.end(), [&](int a, int c) { return order_key(a) < order_key(c); });
}

EvictedBlock EvictPolicy::evict(int b, bool was_candidate) {
  Block& k = blocks_[static_cast<std::size_t>(b)];
  k.evicted = true;
  const int n = block_slots(b);
  evicted_tokens_ += n;
  std::erase(candidates_, b);
  return {b, b * o_.block_tokens, n, k.score, was_candidate};
}

std::vector<EvictedBlock> EvictPolicy::reclaim_candidates(int max_blocks) {
  std::vector<EvictedBlock> out;
  while (static_cast<int>(out.size()) < max_blocks && !candidates_.empty()) out.push_back(evict(candidates_.front(), true));
  return out;
}

std::vector<EvictedBlock> EvictPolicy::fit_budget(int budget_tokens) {
  std::vector<EvictedBlock> out;
  if (live_tokens() <= budget_tokens) return out;
  widen_window(budget_tokens);
  yield_protection(budget_tokens);
  refresh_candidates();
  while (live_tokens() > budget_tokens) {
    if (!candidates_.empty()) {
      out.push_back(evict(candidates_.front(), true));
      continue;
    }
    int best = -1;
    for (int b = 0; b < n_blocks(); ++b) {
      if (blocks_[static_cast<std::size_t>(b)].evicted || never_evicted(b)) continue;
      if (best < 0 || order_key(b) < order_key(best)) best = b;
    }
    if (best < 0) break;  // only blocks that are never evicted remain
    out.push_back(evict(best, false));
  }
  return out;
}

}  // namespace clm
