#include "model/chat_content_ranges.h"

#include <string_view>

namespace clm {

namespace {

// U+FDD0 and U+FDD1: noncharacters, reserved for a program's internal use.
constexpr std::string_view kOpen = "\xEF\xB7\x90";
constexpr std::string_view kClose = "\xEF\xB7\x91";

constexpr std::string_view kWhitespace = " \t\r\n\f\v";

// What the template wrote outside the contents, and the contents in order.
struct Pieces {
  std::vector<std::string_view> markup;   // contents.size() + 1 pieces
  std::vector<std::string_view> contents;
};

std::optional<Pieces> split_wrapped(std::string_view text) {
  Pieces p;
  for (;;) {
    const std::size_t open = text.find(kOpen);
    if (open == std::string_view::npos) break;
    const std::size_t close = text.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view content = text.substr(open + kOpen.size(), close - open - kOpen.size());
    // A template that cut a content apart leaves unmatched sentinels.
    if (content.find(kOpen) != std::string_view::npos) return std::nullopt;
    p.markup.push_back(text.substr(0, open));
    p.contents.push_back(content);
    text.remove_prefix(close + kClose.size());
  }
  if (text.find(kClose) != std::string_view::npos) return std::nullopt;
  p.markup.push_back(text);
  return p;
}

// What a template may have made of a content: the content itself, or it
// trimmed of whitespace at both ends, at the front, or at the back.
std::vector<std::string_view> variants(std::string_view s) {
  const std::size_t first = s.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {s, std::string_view()};
  const std::size_t last = s.find_last_not_of(kWhitespace);
  return {s, s.substr(first, last - first + 1), s.substr(first), s.substr(0, last + 1)};
}

}  // namespace

std::optional<std::vector<ChatMessage>> wrap_contents(std::span<const ChatMessage> messages) {
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    if (m.content.find(kOpen) != std::string::npos || m.content.find(kClose) != std::string::npos) return std::nullopt;
    // An empty content has no range to find, and wrapping it would make it
    // look non-empty to a template that writes its markup by the content
    // (the plain format puts a space after "Assistant:" only before a
    // reply): left as it is, it renders the same both times.
    if (m.content.empty()) {
      out.push_back(m);
      continue;
    }
    out.push_back({m.role, std::string(kOpen) + m.content + std::string(kClose)});
  }
  return out;
}

std::optional<PromptText> locate_contents(const std::string& rendered, const std::string& rendered_wrapped) {
  const auto pieces = split_wrapped(rendered_wrapped);
  if (!pieces) return std::nullopt;
  const std::string_view text = rendered;
  PromptText out{rendered, {}};
  std::size_t at = 0;
  auto continues_with = [&](std::size_t pos, std::string_view piece) {
    return pos <= text.size() && text.substr(pos).starts_with(piece);
  };
  if (!continues_with(0, pieces->markup[0])) return std::nullopt;
  at = pieces->markup[0].size();
  // Each content, as one of its variants, must be followed by exactly the
  // markup the wrapped rendering has after it.
  for (std::size_t i = 0; i < pieces->contents.size(); ++i) {
    const std::string_view next = pieces->markup[i + 1];
    bool found = false;
    for (std::string_view v : variants(pieces->contents[i])) {
      if (!continues_with(at, v) || !continues_with(at + v.size(), next)) continue;
      if (!v.empty()) out.literal.push_back({at, at + v.size()});
      at += v.size() + next.size();
      found = true;
      break;
    }
    if (!found) return std::nullopt;
  }
  if (at != text.size()) return std::nullopt;
  return out;
}

}  // namespace clm
