// The K/V element type flags, the same on every command that builds a KV
// cache (run, chat, serve, bench model, eval): --cache-type-k and
// --cache-type-v (llama.cpp's names; CLI11 takes no multi-letter short
// names, so there is no -ctk/-ctv) and --kv-type, a shorthand that sets both.
#pragma once

#include <CLI/CLI.hpp>

#include "kernels/kv_type.h"

namespace clm {

// Adds the three flags writing into `types`; its values are the defaults.
// --kv-type and the per-tensor flags exclude each other, so no order of
// flags decides what a combination means.
void add_kv_type_flags(CLI::App& cmd, KvTypes& types);

}  // namespace clm
