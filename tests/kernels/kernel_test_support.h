// Shared helpers of the kernel tests: seeded random data and iteration over
// the kernel paths this CPU can run, restoring the active path afterwards.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/matmul.h"
#include "kernels/quantize.h"

namespace clm::test {

inline std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A random rows x cols matrix stored as type t.
struct TestMatrix {
  TestMatrix(WeightType t, int r, int c, unsigned seed) : rows(r), cols(c), type(t) {
    const auto values = random_floats(static_cast<std::size_t>(r) * c, seed);
    stride = row_bytes(t, static_cast<std::size_t>(c));
    bytes.resize(stride * static_cast<std::size_t>(r));
    for (int o = 0; o < r; ++o)
      quantize_row(t, values.data() + static_cast<std::size_t>(o) * c, bytes.data() + o * stride,
                   static_cast<std::size_t>(c));
  }
  WeightMatrix view() const { return {type, bytes.data(), rows, cols, stride}; }
  std::vector<float> row(int o) const {
    std::vector<float> out(static_cast<std::size_t>(cols));
    dequantize_row(type, bytes.data() + static_cast<std::size_t>(o) * stride, out.data(), out.size());
    return out;
  }
  int rows, cols;
  WeightType type;
  std::size_t stride;
  std::vector<std::byte> bytes;
};

// Every path the CPU supports. This project's x86 reference machines have
// AVX-512 with VNNI, so all four x86 paths run there, and an AArch64 CPU with
// the dot-product extension (or qemu-aarch64) runs scalar, neon and neondot.
inline std::vector<KernelPath> supported_paths() {
  std::vector<KernelPath> paths;
  for (KernelPath p : kAllKernelPaths)
    if (kernel_path_supported(p)) paths.push_back(p);
  return paths;
}

class ScopedKernelPath {
 public:
  explicit ScopedKernelPath(KernelPath p) : saved_(active_kernel_path()) { set_kernel_path(p); }
  ~ScopedKernelPath() { set_kernel_path(saved_); }
  ScopedKernelPath(const ScopedKernelPath&) = delete;
  ScopedKernelPath& operator=(const ScopedKernelPath&) = delete;

 private:
  KernelPath saved_;
};

}  // namespace clm::test
