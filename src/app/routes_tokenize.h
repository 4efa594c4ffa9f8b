// POST /tokenize and POST /detokenize: the served model's tokenizer over
// HTTP, in llama.cpp's server shape (tokenize_api.h). They need the API key
// like every route but "/" and "/health".
#pragma once

#include <httplib.h>

#include "app/server_context.h"

namespace clm {

void register_tokenize_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace clm
