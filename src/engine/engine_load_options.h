// EngineLoadOptions: which model an engine loads and how: the GGUF file,
// the worker threads, and the weight loading of model/model.h passed to
// Model::load as it is.
#pragma once

#include <string>

#include "model/model.h"

namespace clm {

// What an engine loads with unless told otherwise: the packed matrices'
// file bytes given back, so that one copy of the weights stays resident.
inline LoadOptions engine_weight_load() {
  LoadOptions o;
  o.release_packed_file_bytes = true;
  return o;
}

struct EngineLoadOptions {
  std::string model_path;
  int n_threads = 0;  // worker threads; 0: all hardware threads
  // Weights: a private huge-page copy (default) or the file's map in place;
  // the progress callback; the model's fingerprint if the caller remembers
  // it from an earlier load of the same file (otherwise it is computed: it
  // hashes every weight byte).
  LoadOptions weights = engine_weight_load();
};

}  // namespace clm
