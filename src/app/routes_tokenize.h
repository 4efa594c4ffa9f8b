// POST /tokenize and POST /detokenize: the served model's tokenizer over
// HTTP, in llama.cpp's server shape (tokenize_api.h). They need the API key
// like every route but "/" and "/health".
#pragma once

#include "app/server_context.h"

namespace clm {

class RouteTable;

void register_tokenize_routes(RouteTable& routes, ServerContext& ctx);

}  // namespace clm
