#include "app/chat_flags.h"
#include "util/bounded_file.h"

#include <cstdio>

namespace clm {

void add_chat_template_flags(CLI::App& cmd, ChatTemplateFlags& flags) {
  cmd.add_option("--chat-format", flags.format,
                 "auto (the model's Jinja chat template, else detected), jinja (the template, required), "
                 "llama2, llama3, chatml, zephyr or plain");
  cmd.add_option("--chat-template-file", flags.template_file,
                 "a Jinja chat template to use instead of the model's");
}

Result<std::string> read_template_file(const std::string& path) {
  return read_bounded_file(path, kMaxTemplateFileBytes, "template file");
}

Result<ChatRenderer> open_chat_renderer(const ChatTemplateFlags& flags, const GgufFile& file,
                                        const Tokenizer& tokenizer, std::string* warning) {
  ChatRendererChoice choice;
  choice.format = flags.format;
  if (!flags.template_file.empty()) {
    auto source = read_template_file(flags.template_file);
    if (!source) return fail("--chat-template-file: " + source.error().message);
    choice.template_source = std::move(*source);
  }
  return choose_chat_renderer(file, tokenizer, choice, warning);
}

std::optional<ChatRenderer> load_chat_renderer(const ChatTemplateFlags& flags, const GgufFile& file,
                                               const Tokenizer& tokenizer) {
  std::string warning;
  auto renderer = open_chat_renderer(flags, file, tokenizer, &warning);
  if (!renderer) {
    std::fprintf(stderr, "clmcache: %s\n", renderer.error().message.c_str());
    return std::nullopt;
  }
  if (!warning.empty()) std::fprintf(stderr, "clmcache: warning: %s\n", warning.c_str());
  return std::move(*renderer);
}

}  // namespace clm
