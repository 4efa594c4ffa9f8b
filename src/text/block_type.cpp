#include "text/block_type.h"

#include <array>

namespace clm {

namespace {
constexpr std::array kTypes = {BlockType::Question, BlockType::Instruction, BlockType::Step, BlockType::Section,
                               BlockType::Turn,     BlockType::Document,    BlockType::Context};
}  // namespace

std::string_view to_string(BlockType type) {
  switch (type) {
    case BlockType::Question: return "question";
    case BlockType::Instruction: return "instruction";
    case BlockType::Step: return "step";
    case BlockType::Section: return "section";
    case BlockType::Turn: return "turn";
    case BlockType::Document: return "document";
    case BlockType::Context: return "context";
  }
  return "unknown";
}

std::optional<BlockType> parse_block_type(std::string_view name) {
  for (BlockType t : kTypes)
    if (name == to_string(t)) return t;
  return std::nullopt;
}

std::span<const BlockType> all_block_types() { return kTypes; }

}  // namespace clm
