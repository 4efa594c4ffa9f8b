#include "app/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clm {

namespace {

using nlohmann::json;
using Check = std::optional<ApiError>;

// A field that is absent or null keeps its default, as with OpenAI.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

Check type_error(const char* name, const char* expected) {
  return invalid_field_error(name, std::string("'") + name + "' must be " + expected, "invalid_type");
}

Check read_number(const json& body, const char* name, double lo, double hi, float& out) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) return type_error(name, "a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi)
    return invalid_field_error(name,
                               std::string("'") + name + "' must be between " + json(lo).dump() + " and " +
                                   json(hi).dump(),
                               "out_of_range");
  out = static_cast<float>(x);
  return std::nullopt;
}

Check read_int(const json& body, const char* name, int64_t lo, int64_t hi, int64_t& out) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return type_error(name, "an integer");
  // Unsigned values above int64's range are out of range, not wrapped.
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return invalid_field_error(name, std::string("'") + name + "' is too large", "out_of_range");
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi)
    return invalid_field_error(
        name, std::string("'") + name + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi),
        "out_of_range");
  out = x;
  return std::nullopt;
}

Check read_int(const json& body, const char* name, int64_t lo, int64_t hi, int& out) {
  int64_t x = out;
  if (auto e = read_int(body, name, lo, hi, x)) return e;
  out = static_cast<int>(x);
  return std::nullopt;
}

Check read_bool(const json& body, const char* name, bool& out) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return type_error(name, "true or false");
  out = v->get<bool>();
  return std::nullopt;
}

Check read_string(const json& body, const char* name, std::size_t max_len, std::string& out) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) return type_error(name, "a string");
  if (v->get_ref<const std::string&>().size() > max_len)
    return invalid_field_error(name, std::string("'") + name + "' is longer than " + std::to_string(max_len) +
                                         " characters", "out_of_range");
  out = v->get<std::string>();
  return std::nullopt;
}

Check read_stop(const json& body, std::vector<std::string>& out) {
  const json* v = field(body, "stop");
  if (!v) return std::nullopt;
  std::vector<std::string> stops;
  if (v->is_string()) {
    stops.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStopStrings)
      return invalid_field_error("stop", "'stop' holds at most " + std::to_string(kMaxStopStrings) + " strings",
                                 "out_of_range");
    for (const auto& s : *v) {
      if (!s.is_string()) return type_error("stop", "a string or an array of strings");
      stops.push_back(s.get<std::string>());
    }
  } else {
    return type_error("stop", "a string or an array of strings");
  }
  // An empty stop string would match at once; it means nothing, so drop it.
  for (auto& s : stops)
    if (!s.empty()) out.push_back(std::move(s));
  return std::nullopt;
}

Check check_model(const json& body, const RequestDefaults& d, std::string& out) {
  out = d.model_id;
  std::string model;
  if (auto e = read_string(body, "model", 1024, model)) return e;
  if (!model.empty() && model != d.model_id) return model_not_found_error(model);
  return std::nullopt;
}

Check read_reuse(const json& body, std::optional<ReuseMode>& out) {
  const json* v = field(body, "reuse");
  if (!v) return std::nullopt;
  if (!v->is_string()) return type_error("reuse", "a string: \"off\", \"prefix\", \"shift\" or \"blend\"");
  out = parse_reuse_mode(v->get_ref<const std::string&>());
  if (!out)
    return invalid_field_error("reuse",
                               "'reuse' must be \"off\", \"prefix\", \"shift\" or \"blend\", not " + v->dump());
  return std::nullopt;
}

Check read_blend_ratio(const json& body, std::optional<BlendChoice>& out) {
  const json* v = field(body, "blend_ratio");
  if (!v) return std::nullopt;
  if (v->is_string()) {
    if (v->get_ref<const std::string&>() != "auto")
      return invalid_field_error("blend_ratio", "'blend_ratio' must be a number in [0, 1] or \"auto\", not " + v->dump());
    out = parse_blend_ratio("auto");
    return std::nullopt;
  }
  float ratio = 0.0f;
  if (auto e = read_number(body, "blend_ratio", 0.0, 1.0, ratio)) return e;
  out = BlendChoice{ratio, false};
  return std::nullopt;
}

Check read_block_strategy(const json& body, std::optional<BlockStrategy>& out) {
  const json* v = field(body, "block_strategy");
  if (!v) return std::nullopt;
  if (!v->is_string()) return type_error("block_strategy", "a string: \"token\", \"semantic\" or \"session\"");
  out = parse_block_strategy(v->get_ref<const std::string&>());
  if (!out)
    return invalid_field_error("block_strategy",
                               "'block_strategy' must be \"token\", \"semantic\" or \"session\", not " + v->dump());
  return std::nullopt;
}

Check read_evict_positions(const json& body, std::optional<EvictPositions>& out) {
  const json* v = field(body, "evict_positions");
  if (!v) return std::nullopt;
  if (!v->is_string()) return type_error("evict_positions", "a string: \"keep\" or \"compact\"");
  out = parse_evict_positions(v->get_ref<const std::string&>());
  if (!out)
    return invalid_field_error("evict_positions",
                               "'evict_positions' must be \"keep\" or \"compact\", not " + v->dump());
  return std::nullopt;
}

// Fields both endpoints share.
Check read_common(const json& body, const RequestDefaults& d, GenerationRequest& r) {
  if (auto e = check_model(body, d, r.model)) return e;
  r.max_tokens = d.max_tokens;
  r.sampler = d.sampler;
  // A completion of zero tokens scores (echo + logprobs) or caches its
  // prompt; a chat reply of zero tokens has no use.
  const int min_tokens = r.endpoint == ApiEndpoint::Completion ? 0 : 1;
  if (auto e = read_int(body, "max_tokens", min_tokens, d.max_tokens_limit, r.max_tokens)) return e;
  if (auto e = read_int(body, "max_completion_tokens", min_tokens, d.max_tokens_limit, r.max_tokens)) return e;
  int n = 1;
  if (auto e = read_int(body, "n", 1, 128, n)) return e;
  if (n != 1) return unsupported_value_error("n", "this server returns one choice per request; 'n' must be 1");
  if (auto e = read_number(body, "temperature", 0.0, 2.0, r.sampler.temperature)) return e;
  if (auto e = read_number(body, "top_p", 0.0, 1.0, r.sampler.top_p)) return e;
  if (auto e = read_number(body, "presence_penalty", -2.0, 2.0, r.sampler.presence_penalty)) return e;
  if (auto e = read_number(body, "frequency_penalty", -2.0, 2.0, r.sampler.frequency_penalty)) return e;
  if (auto e = read_number(body, "min_p", 0.0, 1.0, r.sampler.min_p)) return e;
  if (auto e = read_number(body, "repeat_penalty", 0.0, 10.0, r.sampler.repeat_penalty)) return e;
  if (r.sampler.repeat_penalty == 0.0f)
    return invalid_field_error("repeat_penalty", "'repeat_penalty' must be above 0 (1 turns it off)",
                               "out_of_range");
  if (auto e = read_int(body, "top_k", 0, 1 << 20, r.sampler.top_k)) return e;
  int64_t seed = 0;
  if (field(body, "seed")) {
    if (auto e = read_int(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                          seed))
      return e;
    // -1 wraps to kRandomSeed: a fresh random seed, as in llama.cpp.
    r.sampler.seed = static_cast<uint64_t>(seed);
  }
  if (auto e = read_stop(body, r.stop)) return e;
  if (auto e = read_string(body, "user", 256, r.user)) return e;
  if (auto e = read_bool(body, "stream", r.stream)) return e;
  if (const json* opts = field(body, "stream_options")) {
    if (!opts->is_object()) return type_error("stream_options", "an object");
    if (!r.stream)
      return invalid_field_error("stream_options", "'stream_options' is only allowed when 'stream' is true");
    if (auto e = read_bool(*opts, "include_usage", r.include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  if (auto e = read_string(body, "session_id", 256, r.session_id)) return e;
  if (std::any_of(r.session_id.begin(), r.session_id.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
    return invalid_field_error("session_id", "'session_id' may not contain control characters");
  if (auto e = read_string(body, "cache_salt", 256, r.cache_salt)) return e;
  if (auto e = read_reuse(body, r.overrides.reuse)) return e;
  if (auto e = read_blend_ratio(body, r.overrides.blend)) return e;
  if (auto e = read_block_strategy(body, r.overrides.block_strategy)) return e;
  if (field(body, "kv_budget_tokens")) {
    int budget = 0;
    if (auto e = read_int(body, "kv_budget_tokens", 0, 1 << 24, budget)) return e;
    r.overrides.kv_budget_tokens = budget;
  }
  if (auto e = read_evict_positions(body, r.overrides.evict_positions)) return e;
  if (auto e = read_bool(body, "return_tokens_as_token_ids", r.return_tokens_as_token_ids)) return e;
  if (auto e = read_bool(body, "ignore_eos", r.ignore_eos)) return e;
  return std::nullopt;
}

std::expected<std::string, ApiError> message_content(const json& content, std::size_t index) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();  // an assistant turn that only called tools
  if (!content.is_array())
    return std::unexpected(invalid_field_error(param, "'" + param + "' must be a string or an array of text parts",
                                               "invalid_type"));
  std::string text;
  for (const auto& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      return std::unexpected(unsupported_value_error(
          param, "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported in '" + param + "'"));
    text += part["text"].get<std::string>();
  }
  return text;
}

Check read_messages(const json& body, std::vector<ChatMessage>& out) {
  const json* v = field(body, "messages");
  if (!v) return invalid_field_error("messages", "'messages' is required", "missing_field");
  if (!v->is_array()) return type_error("messages", "an array of messages");
  if (v->empty()) return invalid_field_error("messages", "'messages' must hold at least one message", "out_of_range");
  for (std::size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return invalid_field_error(at, "'" + at + "' must be an object", "invalid_type");
    if (!m.contains("role") || !m["role"].is_string())
      return invalid_field_error(at + ".role", "'" + at + ".role' must be a string", "invalid_type");
    std::string role = m["role"].get<std::string>();
    // "developer" is OpenAI's newer name for the system role.
    if (role == "developer") role = "system";
    if (role == "tool" || role == "function")
      return unsupported_value_error(at + ".role", "this server does not call tools; '" + role +
                                                       "' messages are not supported");
    if (role != "system" && role != "user" && role != "assistant")
      return invalid_field_error(at + ".role", "unknown role '" + role + "' in '" + at + ".role'");
    auto content = message_content(m.contains("content") ? m["content"] : json(nullptr), i);
    if (!content) return content.error();
    out.push_back({role, std::move(*content)});
  }
  return std::nullopt;
}

const char* const kPromptForms = "a string, an array of one string, or an array of token ids";

// One prompt given as token ids: integers of the model's vocabulary.
// `name` is how the array is written in messages: prompt or prompt[0].
Check read_token_ids(const json& ids, const std::string& name, const RequestDefaults& d, std::vector<int32_t>& out) {
  if (ids.empty()) return invalid_field_error("prompt", "'" + name + "' holds no token ids", "out_of_range");
  const int64_t limit = d.n_vocab > 0 ? d.n_vocab : std::numeric_limits<int32_t>::max();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const json& id = ids[i];
    const std::string at = name + "[" + std::to_string(i) + "]";
    if (!id.is_number_integer()) return invalid_field_error("prompt", "'" + at + "' is " + id.dump() +
                                                                          "; token ids are integers", "invalid_type");
    // Unsigned values above int64's range are out of range, not wrapped.
    const bool huge = id.is_number_unsigned() &&
                      id.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    const int64_t x = huge ? limit : id.get<int64_t>();
    if (x < 0 || x >= limit)
      return invalid_field_error("prompt",
                                 "'" + at + "' is " + id.dump() + ", not a token id of this model (ids are 0 to " +
                                     std::to_string(limit - 1) + ")",
                                 "out_of_range");
    out.push_back(static_cast<int32_t>(x));
  }
  return std::nullopt;
}

// A string, an array of one string, an array of token ids, or an array of
// one array of token ids (the batched form with one prompt).
Check read_prompt(const json& body, const RequestDefaults& d, GenerationRequest& r) {
  const json* v = field(body, "prompt");
  if (!v) return invalid_field_error("prompt", "'prompt' is required", "missing_field");
  if (v->is_string()) {
    r.prompt = v->get<std::string>();
    return std::nullopt;
  }
  if (!v->is_array()) return type_error("prompt", kPromptForms);
  if (v->empty()) return invalid_field_error("prompt", "'prompt' is an empty array", "out_of_range");
  const json& first = (*v)[0];
  auto all = [&](auto&& is) { return std::all_of(v->begin(), v->end(), is); };
  if (first.is_string() && all([](const json& p) { return p.is_string(); })) {
    if (v->size() > 1) return unsupported_value_error("prompt", "this server takes one prompt per request");
    r.prompt = first.get<std::string>();
    return std::nullopt;
  }
  if (first.is_array() && all([](const json& p) { return p.is_array(); })) {
    if (v->size() > 1) return unsupported_value_error("prompt", "this server takes one prompt per request");
    return read_token_ids(first, "prompt[0]", d, r.prompt_ids);
  }
  if (first.is_number()) return read_token_ids(*v, "prompt", d, r.prompt_ids);
  return type_error("prompt", kPromptForms);
}

}  // namespace

std::expected<nlohmann::json, ApiError> parse_json_body(std::string_view body) {
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::unexpected(invalid_json_error("it could not be parsed"));
  if (!parsed.is_object()) return std::unexpected(invalid_json_error("the top level must be an object"));
  return parsed;
}

std::expected<GenerationRequest, ApiError> parse_chat_request(const nlohmann::json& body,
                                                              const RequestDefaults& defaults) {
  GenerationRequest r;
  r.endpoint = ApiEndpoint::Chat;
  if (auto e = read_messages(body, r.messages)) return std::unexpected(*e);
  if (auto e = read_common(body, defaults, r)) return std::unexpected(*e);
  // Chat: logprobs is a flag, top_logprobs how many alternatives, which
  // needs the flag.
  if (auto e = read_bool(body, "logprobs", r.logprobs)) return std::unexpected(*e);
  if (auto e = read_int(body, "top_logprobs", 0, kMaxTopLogprobs, r.top_logprobs)) return std::unexpected(*e);
  if (field(body, "top_logprobs") && !r.logprobs)
    return std::unexpected(invalid_field_error("top_logprobs", "'top_logprobs' needs 'logprobs': true"));
  return r;
}

std::expected<GenerationRequest, ApiError> parse_completion_request(const nlohmann::json& body,
                                                                    const RequestDefaults& defaults) {
  GenerationRequest r;
  r.endpoint = ApiEndpoint::Completion;
  if (auto e = read_prompt(body, defaults, r)) return std::unexpected(*e);
  if (auto e = read_common(body, defaults, r)) return std::unexpected(*e);
  if (auto e = read_bool(body, "echo", r.echo)) return std::unexpected(*e);
  if (auto e = read_bool(body, "parse_special", r.parse_special)) return std::unexpected(*e);
  if (field(body, "logprob_start_len")) {
    int start = 0;
    if (auto e = read_int(body, "logprob_start_len", 0, std::numeric_limits<int32_t>::max(), start))
      return std::unexpected(*e);
    r.logprob_start_len = start;
  }
  // The prompt's log-probabilities are known only when the request ends, so
  // a stream could not send them first, where they belong.
  if (r.echo && r.stream)
    return std::unexpected(unsupported_value_error(
        "echo", "'echo' cannot be streamed (the prompt's log-probabilities are known only at the end); "
                "send it with 'stream': false"));
  // Legacy completions: logprobs is the number of alternatives (0-5 in
  // OpenAI's API; we allow up to kMaxTopLogprobs).
  int n_logprobs = -1;
  if (auto e = read_int(body, "logprobs", 0, kMaxTopLogprobs, n_logprobs)) return std::unexpected(*e);
  if (n_logprobs >= 0) {
    r.logprobs = true;
    r.top_logprobs = n_logprobs;
  }
  return r;
}

}  // namespace clm
