// `clmcache template render`: prints exactly what a Jinja chat template
// writes for a context given as JSON, nothing added or removed: for
// checking a model's template, and for comparing with other renderers.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "app/chat_flags.h"
#include "app/commands.h"
#include "model/gguf.h"
#include "model/jinja/template.h"
#include "model/tokenizer.h"

namespace clm {

namespace {

struct TemplateFlags {
  std::string model;
  std::string template_file;
  std::string context_file = "-";
};

int report(const std::string& message) {
  std::fprintf(stderr, "clmcache: %s\n", message.c_str());
  return 1;
}

Result<nlohmann::ordered_json> read_context(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    auto file = read_text_file(path);
    if (!file) return std::unexpected(file.error());
    text = std::move(*file);
  }
  auto json = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return fail("the context is not valid JSON");
  return json;
}

int render(const TemplateFlags& f) {
  std::string source;
  jinja::Dict defaults;  // what the context does not say
  if (!f.template_file.empty()) {
    auto text = read_text_file(f.template_file);
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

  auto json = read_context(f.context_file);
  if (!json) return report("--context: " + json.error().message);
  auto context = jinja::context_from_json(*json);
  if (!context) return report("--context: " + context.error().message);
  for (const auto& [k, v] : defaults.entries()) {
    if (!context->find(k)) context->append(k, v);
  }
  auto tmpl = jinja::Template::parse(source);
  if (!tmpl) return report("chat template: " + tmpl.error().message);
  auto text = tmpl->render(*context);
  if (!text) return report("chat template: " + text.error().message);
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
  cmd->callback([f, &exit_code] { exit_code = render(*f); });
}

}  // namespace clm
