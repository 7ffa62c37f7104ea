// FLOP counts of the passes of a gradient, against counts worked out by hand.
#include "rematkit/analysis/flops.hpp"

#include <gtest/gtest.h>

#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const char* kTwoLayers = R"({ lambda ; W1:f32[5,4] W2:f32[6,5] x:f32[4]. let
    a:f32[5] = checkpoint[policy=dots_with_no_batch_dims_saveable jaxpr={ lambda ; w:f32[5,4] v:f32[4]. let
        y:f32[5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] w v
        z:f32[5] = sin y
      in (z,) }] W1 x
    b:f32[6] = dot_general[dimension_numbers=(([1], [0]), ([], []))] W2 a
    c:f32[6] = sin b
  in (c,) })";

TEST(Flops, TwoLayersWithACheckpointedFirstLayer) {
  const Linearization lin = linearize_with(parse_program(kTwoLayers, "two_layers"));
  const GradientFlops flops = gradient_flops(lin);
  // Forward: W1 x (2*5*4), sin y (5), W2 a (2*6*5), sin b and its coefficient cos b (6 + 6); the
  // checkpoint saves the dot y, so its cos y is recomputed (5). Backward: ct * cos b (6), W2^T ct
  // and ct a^T (60 each), ct * cos y (5), ct x^T and W1^T ct (40 each).
  EXPECT_EQ(flops.forward, 40 + 5 + 60 + 6 + 6);
  EXPECT_EQ(flops.recompute, 5);
  EXPECT_EQ(flops.backward, 6 + 60 + 60 + 5 + 40 + 40);
}

TEST(Flops, NothingSaveableRecomputesTheWholeCheckpoint) {
  const Linearization lin = linearize_with(parse_program(kTwoLayers, "two_layers"), "nothing_saveable");
  const GradientFlops flops = gradient_flops(lin);
  // With the whole program checkpointed and nothing saved, the forward computes only the outputs'
  // path (W1 x, sin, W2 a, sin); the backward recomputes it with both cosines.
  EXPECT_EQ(flops.forward, 40 + 5 + 60 + 6);
  EXPECT_EQ(flops.recompute, 40 + 5 + 5 + 60 + 6);
  EXPECT_EQ(flops.backward, 6 + 60 + 60 + 5 + 40 + 40);
}

TEST(Flops, BatchedProductsAndReductions) {
  const Linearization lin = linearize_with(parse_program(R"({ lambda ; a:f32[3,4,5] b:f32[3,5,2]. let
      c:f32[3,4,2] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b
      d:f32[] = reduce_sum[axes=(0, 1, 2)] c
    in (d,) })", "bmm"));
  // 2 * (3*4*2 outputs) * 5 contracted, then 24 additions.
  EXPECT_EQ(gradient_flops(lin).forward, 2 * 24 * 5 + 24);
}

}  // namespace
}  // namespace rematkit::testing
