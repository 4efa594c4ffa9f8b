#include "reuse_prompts.h"

#include <string>

#include "dialogue_text.h"

namespace clm {

Result<ReusePrompts> make_reuse_prompts(const Tokenizer& tokenizer, int n, int k) {
  if (k < 1 || n < k + 2)
    return fail("bench reuse: need --edit >= 1 and --tokens >= --edit + 2 (got " + std::to_string(n) + " and " +
                std::to_string(k) + ")");
  ReusePrompts p;
  p.base.push_back(tokenizer.bos_id() >= 0 ? tokenizer.bos_id() : 0);
  const auto dialogue = dialogue_tokens(tokenizer, n - 1, 1);
  p.base.insert(p.base.end(), dialogue.begin(), dialogue.end());
  // New text is customer questions, which the dialogue never contains, so
  // that no long run of it can be found in the cached conversation. Like
  // every turn of the dialogue it starts with "Customer:".
  const auto new_start = question_tokens(tokenizer, k, 0);
  const auto new_middle = question_tokens(tokenizer, k, 5);
  const auto after_edit = p.base.begin() + 1 + k;

  p.edit.push_back(p.base.front());
  p.edit.insert(p.edit.end(), new_start.begin(), new_start.end());
  p.edit.insert(p.edit.end(), after_edit, p.base.end());

  p.insert_at = n / 2;
  p.insert.assign(p.base.begin(), p.base.begin() + p.insert_at);
  p.insert.insert(p.insert.end(), new_middle.begin(), new_middle.end());
  p.insert.insert(p.insert.end(), p.base.begin() + p.insert_at, p.base.end());

  p.erase.push_back(p.base.front());
  p.erase.insert(p.erase.end(), after_edit, p.base.end());
  return p;
}

nlohmann::json to_json(const ReusePrompts& p) {
  return {{"base", p.base}, {"edit", p.edit}, {"insert", p.insert}, {"delete", p.erase}};
}

}  // namespace clm
