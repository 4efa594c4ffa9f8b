#include "model/pair_merge.h"

#include <queue>

#include "model/utf8.h"

namespace clm {

std::vector<PieceSpan> merge_pairs(std::string_view text, const MergePriority& priority) {
  // Symbols form a linked list over the text; a merge grows the left symbol
  // and empties the right one.
  struct Symbol {
    int prev;
    int next;
    std::size_t start;
    std::size_t len;
  };
  std::vector<Symbol> syms;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t len = utf8_decode_at(text, pos).len;
    const int idx = static_cast<int>(syms.size());
    syms.push_back({idx - 1, idx + 1, pos, len});
    pos += len;
  }
  if (syms.empty()) return {};
  syms.back().next = -1;

  struct Candidate {
    int left;
    int right;
    double priority;
    std::size_t len;  // merged length, to recognise stale entries
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = syms[static_cast<std::size_t>(left)];
    const Symbol& r = syms[static_cast<std::size_t>(right)];
    const auto p = priority(text.substr(l.start, l.len), text.substr(r.start, r.len));
    if (p) queue.push({left, right, *p, l.len + r.len});
  };
  for (std::size_t i = 1; i < syms.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = syms[static_cast<std::size_t>(c.left)];
    Symbol& r = syms[static_cast<std::size_t>(c.right)];
    if (l.len == 0 || r.len == 0 || l.len + r.len != c.len) continue;  // stale
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<std::size_t>(r.next)].prev = c.left;
    try_add(l.prev, c.left);
    try_add(c.left, l.next);
  }

  std::vector<PieceSpan> pieces;
  for (int i = 0; i >= 0; i = syms[static_cast<std::size_t>(i)].next)
    pieces.push_back({syms[static_cast<std::size_t>(i)].start, syms[static_cast<std::size_t>(i)].len});
  return pieces;
}

}  // namespace clm
