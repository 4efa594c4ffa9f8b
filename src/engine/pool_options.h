// PoolOptions: the shape and size of an engine's KV pool: tokens per
// block, the K and V element types, and the memory it may take.
#pragma once

#include <cstddef>

#include "kernels/kv_type.h"

namespace clm {

struct PoolOptions {
  int block_size = 32;  // tokens per KV block
  KvTypes kv_types;     // K and V element types (kv_type.h); f16 both by default
  // KV pool budget in MiB; 0 sizes the pool for one n_ctx sequence (or one
  // KV budget). A budget smaller than one n_ctx sequence also bounds what
  // one sequence may hold.
  std::size_t kv_memory_mb = 0;
};

}  // namespace clm
