// The model fingerprint is stable for one file and changes with any weight
// byte, shape or architecture value.
#include <gtest/gtest.h>

#include "model/fingerprint.h"
#include "model/synthetic_model.h"
#include "support/test_paths.h"

namespace clm {
namespace {

Result<uint64_t> fingerprint_of(const SyntheticModelSpec& spec) {
  const std::string path = test::temp_dir() + "/m.gguf";
  if (auto ok = write_synthetic_model(spec, path); !ok) return std::unexpected(ok.error());
  auto f = GgufFile::open(path);
  if (!f) return std::unexpected(f.error());
  return model_fingerprint(*f);
}

TEST(Fingerprint, StableAndSensitive) {
  SyntheticModelSpec base;
  const auto a = fingerprint_of(base);
  const auto again = fingerprint_of(base);
  ASSERT_TRUE(a && again);
  EXPECT_EQ(*a, *again);
  SyntheticModelSpec seed = base;
  seed.seed = 2;  // same shapes, other weights
  SyntheticModelSpec rope = base;
  rope.rope_freq_base = 500000.0f;  // same tensors, other architecture value
  SyntheticModelSpec type = base;
  type.weight_type = WeightType::Q8_0;
  SyntheticModelSpec layers = base;
  layers.n_layers = 3;
  for (const auto& other : {seed, rope, type, layers}) {
    const auto f = fingerprint_of(other);
    ASSERT_TRUE(f);
    EXPECT_NE(*f, *a);
  }
  auto real = GgufFile::open(test::shared_file("models/stories260K.gguf"));
  ASSERT_TRUE(real);
  EXPECT_EQ(model_fingerprint(*real), model_fingerprint(*real));
  EXPECT_NE(model_fingerprint(*real), *a);
}

}  // namespace
}  // namespace clm
