// Which context a live sequence may forget when it outgrows its KV budget
// (DESIGN.md, "Eviction: two different questions", question 2). A pure unit:
// it sees the sequence only as token slots in order (slot i holds the i-th
// token processed, its position kept), the text of each token (for the
// protect rules) and the attention statistics the forward pass collected
// (kv_view.h); it decides, the caller drops. Eviction is by policy block:
// block b holds slots [b * block_tokens, (b + 1) * block_tokens).
//
// The `attention` policy: every aggregate_every processed tokens, each live
// block's normalised mass (its slots' probability mass divided by the
// queries that could see them, so old blocks are not favoured merely for
// having been seen more often) is folded into a decayed score. Blocks under
// candidate_fraction x the mean score are candidates, queued lowest first.
// Never evicted: the first sink_blocks blocks (attention sinks), blocks
// touching the last recent_tokens tokens, blocks in the top top_share of any
// of the last top_history aggregations, and blocks holding text a protect
// rule matches -- within limits, so that rules matching common text (a name
// in every sentence of a story) cannot claim the whole budget: by default
// only the first occurrence of each distinct match is protected (later
// mentions repeat what is kept), and over a budget the blocks kept only by
// protection hold at most protect_share of it (beyond that, protection
// yields, the lowest-scored protected blocks first).
//
// Over a budget the split between the recent window and the rest depends on
// how much the sequence must forget: a budget of B tokens for a sequence of
// N widens the window to window_scale x (1 - B / N) x B tokens when that is
// more than recent_tokens (the scored blocks get a smaller share the
// smaller the budget: on a small model what decides agreement at a small
// budget is how many of the most recent tokens are kept); top blocks outside
// the sinks and the widened window then yield, the lowest-scored first,
// until those fit in the budget, and protection yields when the sinks, the
// window and the top blocks leave it no room. The baselines: `window` forgets the oldest blocks, `sinks-window`
// the oldest after the sinks, `h2o` those with the least raw summed mass
// (heavy hitters) outside the recent window.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <re2/re2.h>

#include "util/error.h"

namespace clm {

enum class EvictKind { Window, SinksWindow, H2O, Attention };

std::string_view evict_kind_name(EvictKind k);
// "window", "sinks-window", "h2o" or "attention".
std::optional<EvictKind> parse_evict_kind(std::string_view name);

// The default protect rules: numbers, identifiers such as order numbers
// (letters then digits, e.g. "ORD-1234"), and capitalised names inside a
// sentence (a capitalised word after a lower-case letter or a comma, so not
// a sentence's first word). With protect_first_only, each protects the first
// occurrence of each distinct text it matches.
std::vector<std::string> default_protect_patterns();

struct EvictOptions {
  EvictKind kind = EvictKind::Attention;
  int block_tokens = 16;            // tokens per policy block
  int aggregate_every = 64;         // processed tokens between aggregations
  double decay = 0.5;               // share of the previous score an aggregation keeps
  double candidate_fraction = 0.3;  // blocks under this x the mean score are candidates
  int sink_blocks = 1;              // first blocks never evicted (attention, sinks-window)
  int recent_tokens = 64;           // blocks touching the last this many tokens are never evicted
  double top_share = 0.05;          // blocks in this top share of an aggregation are never evicted ...
  int top_history = 3;              // ... for this many aggregations
  // RE2 patterns over the sequence's text; a block holding any byte of a
  // match (of capture group 1 when the pattern has one) is never evicted.
  std::vector<std::string> protect_patterns = default_protect_patterns();
  // Only the first occurrence of each distinct matched text protects its
  // block (per rule); false: every occurrence does.
  bool protect_first_only = true;
  // In fit_budget, blocks kept only by a protect rule hold at most this
  // share of the budget; the lowest-scored of the others yield (become
  // evictable like any block) until they fit. 1: they may fill the budget.
  double protect_share = 0.25;
  // Over a budget B with N tokens processed, the recent window covers at
  // least window_scale x (1 - B / N) x B tokens (attention only; capped so
  // that the sinks and the window fit in B; top blocks outside them yield
  // when they do not fit beside them). 0: recent_tokens whatever the
  // budget.
  double window_scale = 1.0;
};

// Why a block is where it is (for statistics and tests).
enum class BlockStatus { Evictable, Candidate, Sink, Recent, Top, Protected, Evicted };
std::string_view block_status_name(BlockStatus s);

struct EvictedBlock {
  int block = 0;
  int first_slot = 0;
  int n_slots = 0;
  double score = 0.0;
  bool was_candidate = false;  // taken from the candidate queue (else: needed to fit the budget)
};

class EvictPolicy {
 public:
  // Checks the options and compiles the protect rules; a bad one is refused
  // with RE2's explanation.
  static Result<EvictPolicy> create(EvictOptions options);
  ~EvictPolicy();
  EvictPolicy(EvictPolicy&&) noexcept;
  EvictPolicy& operator=(EvictPolicy&&) noexcept;

  const EvictOptions& options() const { return o_; }
  int n_tokens() const { return static_cast<int>(token_end_.size()); }
  int n_blocks() const { return static_cast<int>(blocks_.size()); }
  int live_tokens() const { return n_tokens() - evicted_tokens_; }
  int evicted_tokens() const { return evicted_tokens_; }

  // The sequence processed these tokens (their text, one piece each).
  void append(std::span<const std::string> pieces);
  // True once aggregate_every tokens were appended since the last aggregation.
  bool aggregation_due() const { return n_tokens() - aggregated_at_ >= o_.aggregate_every; }
  // Folds the statistics collected since the last aggregation (one entry
  // per slot so far; evicted slots should hold 0) into the block scores,
  // then refreshes the top sets, protections and the candidate queue. Zeroes
  // mass and queries for the next period.
  void aggregate(std::span<float> mass, std::span<uint32_t> queries);

  // Under pool pressure: evicts up to max_blocks candidates, lowest first.
  std::vector<EvictedBlock> reclaim_candidates(int max_blocks);
  // Over budget: evicts until live_tokens() <= budget_tokens, candidates
  // first, then the other evictable blocks lowest first (the oldest first
  // for window and sinks-window). Stops early when only blocks that are
  // never evicted remain. Does nothing within budget.
  std::vector<EvictedBlock> fit_budget(int budget_tokens);

  BlockStatus status(int block) const;
  // The candidate queue, lowest score first.
  std::vector<int> candidates() const;
  // The block's current score (the larger, the more worth keeping).
  double score(int block) const;
  bool evicted_slot(int slot) const { return blocks_[static_cast<std::size_t>(slot / o_.block_tokens)].evicted; }

 private:
  struct Block {
    bool evicted = false;
    bool scored = false;     // has been through an aggregation with queries
    bool protect = false;    // a protect rule matches its text
    bool yielded = false;    // protected, but over protect_share of the last budget
    double score = 0.0;      // decayed normalised mass (attention) or raw summed mass (h2o)
  };
  explicit EvictPolicy(EvictOptions o) : o_(std::move(o)) {}
  int block_slots(int b) const;
  bool never_evicted(int b) const;
  double order_key(int b) const;  // eviction order: the least first
  void refresh_protection();
  bool recent(int b) const;                  // touches the recent window
  bool kept_for_other_reasons(int b) const;  // sink, recent or top (attention)
  void widen_window(int budget_tokens);
  void yield_protection(int budget_tokens);
  void refresh_candidates();
  EvictedBlock evict(int b, bool was_candidate);

  EvictOptions o_;
  std::vector<std::unique_ptr<re2::RE2>> rules_;
  std::string text_;
  std::vector<std::size_t> token_end_;  // byte end of each token's piece in text_
  std::vector<Block> blocks_;
  std::deque<std::vector<int>> tops_;  // the top blocks of the last top_history aggregations
  std::vector<int> candidates_;        // lowest score first
  int aggregated_at_ = 0;
  int evicted_tokens_ = 0;
  int window_tokens_ = 0;  // the recent window; over recent_tokens after widen_window
};

}  // namespace clm
