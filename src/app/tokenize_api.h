// POST /tokenize and POST /detokenize in llama.cpp's server shape: the
// request bodies parsed into structs (a 400 naming the field otherwise) and
// the response bodies built from ids and pieces. No tokenizer here; the
// routes (routes_tokenize.h) do the work.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/api_error.h"

namespace clm {

// {"content": "...", "add_special": false, "parse_special": true, "with_pieces": false}
struct TokenizeRequest {
  std::string content;
  bool add_special = false;   // BOS/EOS as the model adds them
  bool parse_special = true;  // special-token text becomes the token
  bool with_pieces = false;   // each id with its text
};
std::expected<TokenizeRequest, ApiError> parse_tokenize_request(const nlohmann::json& body);

// {"tokens": [ids]}; each id must be below n_vocab.
std::expected<std::vector<int32_t>, ApiError> parse_detokenize_request(const nlohmann::json& body, int n_vocab);

// {"tokens": [ids]}, or with pieces {"tokens": [{"id", "piece"}]} where a
// piece is a string when it is valid UTF-8 and an array of its byte values
// otherwise (a token may hold part of a character).
struct TokenPiece {
  int32_t id = 0;
  std::string piece;  // bytes
};
nlohmann::json tokenize_response(const std::vector<int32_t>& ids);
nlohmann::json tokenize_response(const std::vector<TokenPiece>& pieces);

// {"content": "..."}
nlohmann::json detokenize_response(const std::string& content);

}  // namespace clm
