#include "model/prefill_flops.h"

#include <gtest/gtest.h>

#include <vector>

namespace clm {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.n_layers = 3;
  c.n_embd = 4;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 2;
  c.n_ff = 6;
  return c;
}

TEST(PrefillFlops, CountsBlocksAndAttentionByPosition) {
  const PrefillFlops f(small_config());
  // Per layer: wq 4*4 + wk, wv 4*2 each + wo 4*4 + w1, w2, w3 4*6 each = 120
  // weights; 2 flops each over 3 layers.
  EXPECT_EQ(f.linear_per_token(), 720.0);
  // Attention: 4 * 3 layers * 2 heads * 2 dims = 48 per slot seen.
  EXPECT_EQ(f.token(0), 720.0 + 48.0);
  EXPECT_EQ(f.token(9), 720.0 + 480.0);
  // Full prefill of 3 tokens: 3 * 720 + 48 * (1 + 2 + 3).
  EXPECT_EQ(f.full(3), 2448.0);
  EXPECT_EQ(f.computed(std::vector<bool>{true, true, true}), f.full(3));
  // The first token reused: positions 1 and 2 computed.
  EXPECT_EQ(f.computed(std::vector<bool>{false, true, true}), 2 * 720.0 + 48.0 * (2 + 3));
  EXPECT_EQ(f.computed(std::vector<bool>{false, false, false}), 0.0);
  EXPECT_EQ(f.full(0), 0.0);
}

TEST(PrefillFlops, AProbeCostsTheLayersBeforeItsLayerAndThatLayersVProjection) {
  const PrefillFlops f(small_config());
  // Layer 0 of a token at position 9: (720 + 480) / 3; then wv of layer 1:
  // 2 * 8.
  EXPECT_EQ(f.probe(9, 1), 400.0 + 16.0);
  EXPECT_EQ(f.probe(9, 2), 800.0 + 16.0);
  EXPECT_DOUBLE_EQ(f.v_share_of_layer(), 16.0 / 240.0);
  // Resumed at layer 1: layers 1 and 2 of the same token.
  EXPECT_EQ(f.resumed(9, 1), 800.0);
  EXPECT_EQ(f.probe(9, 1) - 16.0 + f.resumed(9, 1), f.token(9));
}

}  // namespace
}  // namespace clm
