// The prompts of `clmcache bench reuse`: a long conversation and the same
// conversation changed three ways (its start edited, text inserted in the
// middle, its start deleted), as token ids, so that other engines can replay
// exactly the same prompts (`--dump-prompts`).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer.h"
#include "util/error.h"

namespace clm {

struct ReusePrompts {
  std::vector<int32_t> base;    // BOS, then dialogue: n tokens in all
  std::vector<int32_t> edit;    // base with its first k tokens after BOS replaced by k new ones
  std::vector<int32_t> insert;  // base with k new tokens inserted at n / 2
  std::vector<int32_t> erase;   // base without its first k tokens after BOS
  int insert_at = 0;            // where `insert` starts to differ from base
};

// n = prompt_tokens, k = edit_tokens; needs n >= k + 2 (something is left
// after the deleted tokens) and k >= 1.
Result<ReusePrompts> make_reuse_prompts(const Tokenizer& tokenizer, int prompt_tokens, int edit_tokens);

// {"base": [...], "edit": [...], "insert": [...], "delete": [...]}
nlohmann::json to_json(const ReusePrompts& prompts);

}  // namespace clm
