// `clmcache template render`: prints exactly what a Jinja chat template
// writes for a context given as JSON, nothing added or removed: for
// checking a model's template, and for comparing with other renderers
// (--batch renders many contexts in one run).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "app/chat_flags.h"
#include "app/commands.h"
#include "model/gguf.h"
#include "model/jinja/template.h"
#include "model/tokenizer.h"
#include "util/bounded_file.h"

namespace clm {

namespace {

struct TemplateFlags {
  std::string model;
  std::string template_file;
  std::string context_file = "-";
  bool batch = false;
};

int report(const std::string& message) {
  std::fprintf(stderr, "clmcache: %s\n", message.c_str());
  return 1;
}

// A context (or a batch of them) is JSON of a few KiB; far past that it is a mistake.
constexpr std::size_t kMaxContextBytes = 16 * kMiB;

Result<std::string> read_input(const std::string& path) {
  if (path != "-") return read_bounded_file(path, kMaxContextBytes, "context file");
  return read_bounded_stdin(kMaxContextBytes, "the context on standard input");
}

// The template's output for one JSON context, defaults filled in.
Result<std::string> render_context(const jinja::Template& tmpl, std::string_view json_text,
                                   const jinja::Dict& defaults) {
  auto json = nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return fail("the context is not valid JSON");
  auto context = jinja::context_from_json(json);
  if (!context) return std::unexpected(context.error());
  for (const auto& [k, v] : defaults.entries()) {
    if (!context->find(k)) context->append(k, v);
  }
  auto text = tmpl.render(*context);
  if (!text) return fail("chat template: " + text.error().message);
  return text;
}

// One JSON line per input line: {"text": ...} or {"error": ...}.
int render_batch(const jinja::Template& tmpl, const std::string& input, const jinja::Dict& defaults) {
  std::size_t start = 0;
  while (start < input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string::npos) end = input.size();
    const std::string_view line = std::string_view(input).substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const auto text = render_context(tmpl, line, defaults);
    nlohmann::ordered_json out;
    if (text) {
      out["text"] = *text;
    } else {
      out["error"] = text.error().message;
    }
    const std::string dumped = out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::fwrite(dumped.data(), 1, dumped.size(), stdout);
    std::fputc('\n', stdout);
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int render(const TemplateFlags& f) {
  std::string source;
  jinja::Dict defaults;  // what the context does not say
  if (!f.template_file.empty()) {
    auto text = read_template_file(f.template_file);
    if (!text) return report(text.error().message);
    source = std::move(*text);
  }
  if (!f.model.empty()) {
    auto file = GgufFile::open(f.model);
    if (!file) return report(file.error().message);
    auto tok = Tokenizer::from_gguf(*file);
    if (!tok) return report(tok.error().message);
    for (auto [name, id] : {std::pair{"bos_token", (*tok)->bos_id()}, std::pair{"eos_token", (*tok)->eos_id()}}) {
      if (id >= 0) defaults.append(name, jinja::Value::string(std::string((*tok)->token_text(id))));
    }
    if (f.template_file.empty()) {
      auto tmpl = file->get_string("tokenizer.chat_template");
      if (!tmpl) return report("the model has no chat template (tokenizer.chat_template)");
      source.assign(*tmpl);
    }
  }
  if (f.template_file.empty() && f.model.empty()) return report("give --chat-template-file, --model or both");

  auto tmpl = jinja::Template::parse(source);
  if (!tmpl) return report("chat template: " + tmpl.error().message);
  auto input = read_input(f.context_file);
  if (!input) return report("--context: " + input.error().message);
  if (f.batch) return render_batch(*tmpl, *input, defaults);
  auto text = render_context(*tmpl, *input, defaults);
  if (!text) return report(text.error().message);
  std::fwrite(text->data(), 1, text->size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace

void register_template_command(CLI::App& app, int& exit_code) {
  CLI::App* group = app.add_subcommand("template", "chat template tools");
  group->require_subcommand(1);
  auto f = std::make_shared<TemplateFlags>();
  CLI::App* cmd = group->add_subcommand("render", "print what a Jinja chat template writes for a JSON context");
  cmd->add_option("-m,--model", f->model, "GGUF file: its chat template, and its BOS/EOS text as bos_token/eos_token");
  cmd->add_option("--chat-template-file", f->template_file, "the template (instead of the model's)");
  cmd->add_option("--context", f->context_file,
                  "JSON object of the template's variables, e.g. {\"messages\": [...], \"add_generation_prompt\": "
                  "true}; - reads standard input (the default)");
  cmd->add_flag("--batch", f->batch,
                 "the context input holds one JSON object per line; print one JSON line for each: "
                 "{\"text\": ...} or {\"error\": ...}");
  cmd->callback([f, &exit_code] { exit_code = render(*f); });
}

}  // namespace clm
