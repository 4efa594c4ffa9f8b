// BlockType: what kind of text a semantic block holds. A cached snippet is
// only reused for a span of the same type, so the names are part of the rule
// file format and of the CLI's output, and never change meaning.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace clm {

enum class BlockType : uint8_t {
  Question,     // a sentence asking something ("…?", "…吗")
  Instruction,  // an imperative or a sentence citing a clause ("Please …", "根据…条款")
  Step,         // a numbered step line ("1.", "Step 3", "第二步")
  Section,      // a section header ("[Context]:", "## Notes")
  Turn,         // chat-template markup between turns ("<|im_start|>user\n")
  Document,     // a long passage reused whole
  Context,      // everything else
};

std::string_view to_string(BlockType type);
std::optional<BlockType> parse_block_type(std::string_view name);
// Every type, in declaration order (for messages listing the valid names).
std::span<const BlockType> all_block_types();

}  // namespace clm
