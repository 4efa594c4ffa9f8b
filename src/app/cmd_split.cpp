// `clmcache split -f FILE`: shows how the semantic splitter cuts a prompt
// into typed blocks, in the model's tokens, as a table or as JSON.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/model_source.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/utf8.h"
#include "text/split_rules_file.h"
#include "text/token_alignment.h"
#include "util/bounded_file.h"

namespace clm {

namespace {

struct SplitFlags {
  std::string model;
  std::string file;
  std::string rules;
  bool json = false;
};

constexpr std::size_t kPreviewChars = 60;

// One line of text, as a C string literal would spell it (line breaks,
// quotes and other control characters escaped), ill-formed UTF-8 replaced,
// cut after kPreviewChars characters.
std::string preview(std::string_view bytes) {
  std::size_t held = 0;
  const std::string text = utf8_sanitize(bytes, /*final=*/true, &held);
  std::string out;
  std::size_t chars = 0;
  for (const CodePoint& c : utf8_decode(text)) {
    if (chars++ == kPreviewChars) return out + "…";
    switch (c.cp) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (c.cp < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\x%02x", c.cp);
          out += escaped;
        } else {
          out.append(text, c.offset, c.len);
        }
    }
  }
  return out;
}

Result<std::string> read_prompt(const std::string& path, std::size_t limit) {
  return read_bounded_file(path, limit, "input file");
}

struct SplitResult {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<SemanticBlock> blocks;
  std::size_t min_block_length = 0;
};

// Reads the rules, the prompt and the model's tokenizer, and splits.
Result<SplitResult> split_prompt(const SplitFlags& f) {
  auto splitter =
      f.rules.empty() ? Result<SemanticSplitter>(SemanticSplitter::with_default_rules()) : load_split_rules(f.rules);
  if (!splitter) return std::unexpected(splitter.error());
  SplitResult r;
  r.min_block_length = splitter->options().min_block_length;
  auto text = read_prompt(f.file, splitter->options().max_input_bytes);
  if (!text) return std::unexpected(text.error());
  r.text = std::move(*text);
  auto source = resolve_model(f.model);
  if (!source) return std::unexpected(source.error());
  auto gguf = GgufFile::open(source->path);
  if (!gguf) return std::unexpected(gguf.error());
  auto tok = Tokenizer::from_gguf(*gguf);
  if (!tok) return std::unexpected(tok.error());
  // Tokenized as `run` tokenizes a prompt: BOS added, special tokens parsed.
  r.ids = (*tok)->encode(r.text, /*add_special=*/true, /*parse_special=*/true);
  auto offsets = align_tokens(**tok, r.ids, r.text);
  if (!offsets) return fail("cannot split " + f.file + ": " + offsets.error().message);
  auto blocks = splitter->split(r.text, *offsets);
  if (!blocks) return fail("cannot split " + f.file + ": " + blocks.error().message);
  r.blocks = std::move(*blocks);
  return r;
}

void print_json(const SplitResult& r, std::size_t reusable_blocks, std::size_t reusable_tokens) {
  nlohmann::json out = {{"tokens", r.ids.size()},
                        {"bytes", r.text.size()},
                        {"min_block_length", r.min_block_length},
                        {"reusable_blocks", reusable_blocks},
                        {"reusable_tokens", reusable_tokens},
                        {"blocks", nlohmann::json::array()}};
  for (const SemanticBlock& b : r.blocks) {
    out["blocks"].push_back({{"type", to_string(b.type)},
                             {"tokens", {b.tokens.begin, b.tokens.end}},
                             {"bytes", {b.bytes.begin, b.bytes.end}},
                             {"reusable", b.reusable},
                             {"text", r.text.substr(b.bytes.begin, b.bytes.size())}});
  }
  // A block cut inside a character (a tokenizer may split one) is not valid
  // UTF-8 on its own: such bytes print as U+FFFD.
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

void print_table(const SplitResult& r, std::size_t reusable_blocks, std::size_t reusable_tokens) {
  std::printf("%-4s %-11s %-13s %-8s %s\n", "#", "type", "tokens", "reusable", "text");
  for (std::size_t i = 0; i < r.blocks.size(); ++i) {
    const SemanticBlock& b = r.blocks[i];
    const std::string range = std::to_string(b.tokens.begin) + "-" + std::to_string(b.tokens.end);
    const std::string text = preview(std::string_view(r.text).substr(b.bytes.begin, b.bytes.size()));
    std::printf("%-4zu %-11s %-13s %-8s \"%s\"\n", i, std::string(to_string(b.type)).c_str(), range.c_str(),
                b.reusable ? "yes" : "no", text.c_str());
  }
  std::printf("%zu blocks, %zu tokens; %zu blocks (%zu tokens) of at least %zu tokens are reusable\n",
              r.blocks.size(), r.ids.size(), reusable_blocks, reusable_tokens, r.min_block_length);
}

int split(const SplitFlags& f) {
  auto result = split_prompt(f);
  if (!result) {
    std::fprintf(stderr, "clmcache: %s\n", result.error().message.c_str());
    return 1;
  }
  std::size_t reusable_blocks = 0, reusable_tokens = 0;
  for (const SemanticBlock& b : result->blocks) {
    reusable_blocks += b.reusable;
    reusable_tokens += b.reusable ? b.tokens.size() : 0;
  }
  if (f.json)
    print_json(*result, reusable_blocks, reusable_tokens);
  else
    print_table(*result, reusable_blocks, reusable_tokens);
  return 0;
}

}  // namespace

void register_split_command(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<SplitFlags>();
  CLI::App* cmd = app.add_subcommand("split", "show how a prompt is cut into typed semantic blocks");
  cmd->add_option("-m,--model", flags->model, "GGUF model whose tokenizer counts the tokens");
  cmd->add_option("-f,--file", flags->file, "the prompt")->required();
  cmd->add_option("--split-rules", flags->rules, "JSON rule file replacing the default rules");
  cmd->add_flag("--json", flags->json, "print one JSON object with every block's text");
  cmd->callback([flags, &exit_code] { exit_code = split(*flags); });
}

}  // namespace clm
