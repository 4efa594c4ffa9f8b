#include "app/routes_tokenize.h"

#include "app/http_reply.h"
#include "app/openai_request.h"
#include "app/tokenize_api.h"

namespace clm {

void register_tokenize_routes(httplib::Server& server, ServerContext& ctx) {
  server.Post("/tokenize", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto body = parse_json_body(req.body);
    if (!body) return reply_error(res, body.error());
    auto request = parse_tokenize_request(*body);
    if (!request) return reply_error(res, request.error());
    const Tokenizer& tok = ctx.engine.model().tokenizer();
    const std::vector<int32_t> ids = tok.encode(request->content, request->add_special, request->parse_special);
    if (!request->with_pieces) return reply_json(res, tokenize_response(ids));
    std::vector<TokenPiece> pieces;
    pieces.reserve(ids.size());
    // Special tokens show their text, so the pieces add up to the content.
    for (int32_t id : ids) pieces.push_back({id, tok.token_to_piece(id, true)});
    reply_json(res, tokenize_response(pieces));
  });
  server.Post("/detokenize", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto body = parse_json_body(req.body);
    if (!body) return reply_error(res, body.error());
    const Tokenizer& tok = ctx.engine.model().tokenizer();
    auto ids = parse_detokenize_request(*body, tok.n_vocab());
    if (!ids) return reply_error(res, ids.error());
    // As llama.cpp: the pieces one after another, special tokens as text.
    std::string content;
    for (int32_t id : *ids) content += tok.token_to_piece(id, true);
    reply_json(res, detokenize_response(content));
  });
}

}  // namespace clm
