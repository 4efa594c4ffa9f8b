#include "app/tokenize_api.h"

#include <limits>

#include "model/utf8.h"

namespace clm {

namespace {

using nlohmann::json;

std::optional<ApiError> read_flag(const json& body, const char* name, bool& out) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) {
    return invalid_field_error(name, std::string("'") + name + "' must be true or false", "invalid_type");
  }
  out = it->get<bool>();
  return std::nullopt;
}

}  // namespace

std::expected<TokenizeRequest, ApiError> parse_tokenize_request(const json& body) {
  TokenizeRequest r;
  auto content = body.find("content");
  if (content == body.end() || content->is_null()) {
    return std::unexpected(invalid_field_error("content", "'content' is required: the text to tokenize", "missing_field"));
  }
  if (!content->is_string()) {
    return std::unexpected(invalid_field_error("content", "'content' must be a string", "invalid_type"));
  }
  r.content = content->get<std::string>();
  for (auto [name, flag] : {std::pair{"add_special", &r.add_special}, std::pair{"parse_special", &r.parse_special},
                            std::pair{"with_pieces", &r.with_pieces}}) {
    if (auto e = read_flag(body, name, *flag)) return std::unexpected(*e);
  }
  return r;
}

std::expected<std::vector<int32_t>, ApiError> parse_detokenize_request(const json& body, int n_vocab) {
  auto tokens = body.find("tokens");
  if (tokens == body.end() || tokens->is_null()) {
    return std::unexpected(invalid_field_error("tokens", "'tokens' is required: an array of token ids", "missing_field"));
  }
  if (!tokens->is_array()) {
    return std::unexpected(invalid_field_error("tokens", "'tokens' must be an array of token ids", "invalid_type"));
  }
  std::vector<int32_t> ids;
  ids.reserve(tokens->size());
  for (std::size_t i = 0; i < tokens->size(); ++i) {
    const json& id = (*tokens)[i];
    const std::string at = "'tokens[" + std::to_string(i) + "]' is " + id.dump();
    if (!id.is_number_integer()) {
      return std::unexpected(invalid_field_error("tokens", at + "; token ids are integers", "invalid_type"));
    }
    // Unsigned values above int64's range are out of range, not wrapped.
    const bool huge = id.is_number_unsigned() &&
                      id.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    const int64_t x = huge ? n_vocab : id.get<int64_t>();
    if (x < 0 || x >= n_vocab) {
      return std::unexpected(invalid_field_error(
          "tokens", at + ", not a token id of this model (ids are 0 to " + std::to_string(n_vocab - 1) + ")",
          "out_of_range"));
    }
    ids.push_back(static_cast<int32_t>(x));
  }
  return ids;
}

json tokenize_response(const std::vector<int32_t>& ids) { return {{"tokens", ids}}; }

json tokenize_response(const std::vector<TokenPiece>& pieces) {
  json tokens = json::array();
  for (const TokenPiece& p : pieces) {
    json piece;
    if (utf8_is_valid(p.piece)) {
      piece = p.piece;
    } else {
      piece = json::array();
      for (unsigned char c : p.piece) piece.push_back(static_cast<int>(c));
    }
    tokens.push_back({{"id", p.id}, {"piece", std::move(piece)}});
  }
  return {{"tokens", std::move(tokens)}};
}

json detokenize_response(const std::string& content) { return {{"content", content}}; }

}  // namespace clm
