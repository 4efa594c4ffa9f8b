#include "app/model_source.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "model/synthetic_model.h"

namespace clm {

std::string user_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/clmcache";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/clmcache";
  return ".clmcache";
}

Result<ModelSource> resolve_model(const std::string& flag_path) {
  if (!flag_path.empty()) return ModelSource{flag_path, false};
  if (const char* env = std::getenv("CLMCACHE_MODEL"); env != nullptr && *env != '\0')
    return ModelSource{env, false};

  const std::string dir = user_cache_dir() + "/models";
  const std::string path = dir + "/synthetic-demo.gguf";
  if (!std::filesystem::exists(path)) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail("cannot create " + dir + ": " + ec.message());
    std::fprintf(stderr, "clmcache: no model given (-m or CLMCACHE_MODEL); writing a synthetic demo model to %s\n",
                 path.c_str());
    auto spec = synthetic_preset("demo");
    if (!spec) return fail(spec.error().message);
    if (auto ok = write_synthetic_model(*spec, path); !ok) return fail(ok.error().message);
  }
  std::fprintf(stderr,
               "clmcache: using the synthetic model %s: random weights, so its text is meaningless.\n"
               "          Pass -m MODEL.gguf (or set CLMCACHE_MODEL) to run a real model.\n",
               path.c_str());
  return ModelSource{path, true};
}

}  // namespace clm
