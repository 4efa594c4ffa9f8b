// Where the CLI's model comes from: -m, else $CLMCACHE_MODEL, else a small
// synthetic model generated once into the user's cache directory (its text
// is meaningless, and the CLI says so).
#pragma once

#include <string>

#include "util/error.h"

namespace clm {

struct ModelSource {
  std::string path;
  bool synthetic = false;  // generated because no model was given
};

Result<ModelSource> resolve_model(const std::string& flag_path);
// $XDG_CACHE_HOME/clmcache, else $HOME/.cache/clmcache.
std::string user_cache_dir();

}  // namespace clm
