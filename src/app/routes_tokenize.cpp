#include "app/routes_tokenize.h"

#include "app/http_reply.h"
#include "app/http_routes.h"
#include "app/openai_request.h"
#include "app/tokenize_api.h"

namespace clm {

namespace {

HttpResponse tokenize(const HttpRequest& req, ServerContext& ctx) {
  HttpResponse res;
  auto body = parse_json_body(req.body);
  if (!body) return error_response(body.error());
  auto request = parse_tokenize_request(*body);
  if (!request) return error_response(request.error());
  const std::size_t max_prompt = ctx.options.limits.max_prompt_bytes;
  if (request->content.size() > max_prompt)
    return error_response(invalid_field_error("content",
                                              "the content is " + std::to_string(request->content.size()) +
                                                  " bytes; this server tokenizes at most " +
                                                  std::to_string(max_prompt),
                                              "context_length_exceeded"));
  const Tokenizer& tok = ctx.engine.model().tokenizer();
  const std::vector<int32_t> ids = tok.encode(request->content, request->add_special, request->parse_special);
  if (!request->with_pieces) {
    reply_json(res, tokenize_response(ids));
    return res;
  }
  std::vector<TokenPiece> pieces;
  pieces.reserve(ids.size());
  // Special tokens show their text, so the pieces add up to the content.
  for (int32_t id : ids) pieces.push_back({id, tok.token_to_piece(id, true)});
  reply_json(res, tokenize_response(pieces));
  return res;
}

HttpResponse detokenize(const HttpRequest& req, ServerContext& ctx) {
  HttpResponse res;
  auto body = parse_json_body(req.body);
  if (!body) return error_response(body.error());
  const Tokenizer& tok = ctx.engine.model().tokenizer();
  auto ids = parse_detokenize_request(*body, tok.n_vocab());
  if (!ids) return error_response(ids.error());
  // As llama.cpp: the pieces one after another, special tokens as text.
  std::string content;
  for (int32_t id : *ids) content += tok.token_to_piece(id, true);
  reply_json(res, detokenize_response(content));
  return res;
}

}  // namespace

void register_tokenize_routes(RouteTable& routes, ServerContext& ctx) {
  routes.add(Route{"POST", "/tokenize", RouteThread::Handlers, /*json_body=*/true,
                   [&ctx](const HttpRequest& req, std::function<void()>) {
                     return RouteResult{tokenize(req, ctx), nullptr};
                   }});
  routes.add(Route{"POST", "/detokenize", RouteThread::Handlers, /*json_body=*/true,
                   [&ctx](const HttpRequest& req, std::function<void()>) {
                     return RouteResult{detokenize(req, ctx), nullptr};
                   }});
}

}  // namespace clm
