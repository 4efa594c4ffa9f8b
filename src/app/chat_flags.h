// The flags that choose how chat and serve turn conversations into prompts:
// --chat-format and --chat-template-file.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <optional>
#include <string>

#include "model/chat_renderer.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "util/error.h"

namespace clm {

struct ChatTemplateFlags {
  std::string format = "auto";
  std::string template_file;  // empty: none
};

void add_chat_template_flags(CLI::App& cmd, ChatTemplateFlags& flags);

// A chat template file's text, refused past this size (real templates are a
// few KiB) or when it is not a regular file.
inline constexpr std::size_t kMaxTemplateFileBytes = 1u << 20;
Result<std::string> read_template_file(const std::string& path);

// Reads the template file and chooses the renderer; a fallback from the
// model's template to a hand-written format is told in *warning.
Result<ChatRenderer> open_chat_renderer(const ChatTemplateFlags& flags, const GgufFile& file,
                                        const Tokenizer& tokenizer, std::string* warning);
// open_chat_renderer for the CLI: the warning and errors are printed to
// stderr; nullopt on failure.
std::optional<ChatRenderer> load_chat_renderer(const ChatTemplateFlags& flags, const GgufFile& file,
                                               const Tokenizer& tokenizer);

}  // namespace clm
