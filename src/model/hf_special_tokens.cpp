#include "model/hf_special_tokens.h"

#include <optional>
#include <string>
#include <vector>

#include "model/json_member.h"

namespace clm {

namespace {

using nlohmann::json;

// A config entry naming a token: a string, or an AddedToken object with a
// "content" string.
std::optional<std::string> token_text(const json* config, const char* key) {
  if (config == nullptr) return std::nullopt;
  const json* v = json_member(*config, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  const json* content = json_member(*v, "content");
  if (content != nullptr && content->is_string()) return content->get<std::string>();
  return std::nullopt;
}

// The SpecialToken id at one end of a template, if that item is one.
std::optional<std::string> special_item(const json& item) {
  const json* special = json_member(item, "SpecialToken");
  const json* id = special != nullptr ? json_member(*special, "id") : nullptr;
  if (id == nullptr || !id->is_string()) return std::nullopt;
  return id->get<std::string>();
}

struct SpecialTexts {
  std::optional<std::string> bos, eos, unk, pad, eot;
  std::optional<bool> add_bos, add_eos;
};

// llama.cpp's converter reads the single-sequence template crudely: a
// special token first means BOS is added (when it is the BOS or CLS token),
// a special token last means EOS is added; a last token other than the
// config's EOS becomes EOS and the old EOS becomes EOT.
void read_template(const json& single, bool have_config, const std::optional<std::string>& cls, SpecialTexts& s) {
  if (!single.is_array() || single.size() < 2) return;
  if (auto first = special_item(single.front())) {
    if (!have_config) s.bos = first;
    s.add_bos = (s.bos && *first == *s.bos) || (cls && *first == *cls);
  }
  if (auto last = special_item(single.back())) {
    if (!have_config) {
      s.eos = last;
    } else if (s.eos != last) {
      s.eot = s.eos;
      s.eos = last;
    }
    s.add_eos = true;
  }
}

void read_post_processor(const json& tokenizer, bool have_config, const std::optional<std::string>& cls,
                         SpecialTexts& s) {
  const json* post = json_member(tokenizer, "post_processor");
  if (post == nullptr) return;
  std::vector<const json*> processors;
  if (const json* list = json_member(*post, "processors"); list != nullptr && list->is_array()) {
    for (const json& p : *list) processors.push_back(&p);
  } else {
    processors.push_back(post);
  }
  for (const json* p : processors) {
    const json* type = json_member(*p, "type");
    if (type == nullptr || !type->is_string()) continue;
    if (*type == "RobertaProcessing") {
      s.add_bos = true;
      s.add_eos = true;
    } else if (*type == "TemplateProcessing") {
      if (const json* single = json_member(*p, "single")) read_template(*single, have_config, cls, s);
    }
  }
}

// The first added token with this text: the converter looks nowhere else.
int32_t added_token_id(const json& tokenizer, const std::optional<std::string>& text) {
  if (!text) return -1;
  const json* added = json_member(tokenizer, "added_tokens");
  if (added == nullptr || !added->is_array()) return -1;
  for (const json& a : *added) {
    const json* content = json_member(a, "content");
    const json* id = json_member(a, "id");
    if (content != nullptr && content->is_string() && *content == *text && id != nullptr && id->is_number_integer()) {
      return static_cast<int32_t>(id->get<int64_t>());
    }
  }
  return -1;
}

std::string template_name(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum) c = '_';
  }
  return out;
}

// A string, or a list of {"name", "template"} of which "default" is the
// main template.
Status read_chat_templates(const json& config, VocabMetadata& v) {
  const json* t = json_member(config, "chat_template");
  if (t == nullptr) return {};
  if (t->is_string()) {
    v.chat_template = t->get<std::string>();
    return {};
  }
  if (!t->is_array()) return fail("tokenizer_config.json: chat_template must be a string or a list of named templates");
  for (const json& entry : *t) {
    const json* name = json_member(entry, "name");
    const json* text = json_member(entry, "template");
    if (name == nullptr || !name->is_string() || text == nullptr || !text->is_string()) {
      return fail("tokenizer_config.json: each chat_template entry needs a string name and template");
    }
    const std::string key = template_name(name->get<std::string>());
    if (key.empty()) continue;
    if (key == "default") v.chat_template = text->get<std::string>();
    else v.named_chat_templates.emplace_back(key, text->get<std::string>());
  }
  return {};
}

}  // namespace

Status apply_hf_special_tokens(const json& tokenizer, const json* config, VocabMetadata& v) {
  if (config != nullptr && !config->is_object()) return fail("tokenizer_config.json: the top level is not an object");
  SpecialTexts s;
  s.bos = token_text(config, "bos_token");
  s.eos = token_text(config, "eos_token");
  s.unk = token_text(config, "unk_token");
  s.pad = token_text(config, "pad_token");
  const std::optional<std::string> cls = token_text(config, "cls_token");
  const std::optional<std::string> sep = token_text(config, "sep_token");
  if (!s.bos && cls && config != nullptr) s.bos = cls;
  if (!s.eos && sep && config != nullptr) s.eos = sep;
  read_post_processor(tokenizer, config != nullptr, cls, s);

  if (config != nullptr) {
    for (auto [key, flag] : {std::pair{"add_bos_token", &s.add_bos}, std::pair{"add_eos_token", &s.add_eos}}) {
      const json* value = json_member(*config, key);
      if (value == nullptr) continue;
      if (!value->is_boolean()) return fail(std::string("tokenizer_config.json: ") + key + " must be true or false");
      *flag = value->get<bool>();
    }
    if (auto t = read_chat_templates(*config, v); !t) return t;
  }
  v.bos = added_token_id(tokenizer, s.bos);
  v.eos = added_token_id(tokenizer, s.eos);
  v.unk = added_token_id(tokenizer, s.unk);
  v.pad = added_token_id(tokenizer, s.pad);
  v.eot = added_token_id(tokenizer, s.eot);
  v.add_bos = s.add_bos;
  v.add_eos = s.add_eos;
  return {};
}

}  // namespace clm
