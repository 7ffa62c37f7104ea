// The budget solver on a uniform chain, x -> sin -> sin -> ... -> sin -> sum, inside one checkpoint,
// against the classic answers worked out by hand.
//
// Each sin's backward pass reads cos of its input. Under a JAX policy each value is computed at
// most twice (the forward pass, then one recomputation, where the reverse pass first reads it). An
// answer keeps some layers' outputs; the reverse pass recomputes the layers between two kept ones
// when it reaches them, and each recomputed output lives until its cos is read. So with k outputs
// kept before a segment, the segment's L layers need k + L - 1 activations at once, while its kept
// outputs are freed as the reverse pass passes them. With s activations beyond the one-layer chain's
// peak, the segments can be s + 1, s, ..., 1 layers long: at most (s + 1)(s + 2) / 2 = C(s + 2, 2)
// layers. That is Revolve's binomial bound beta(s, 2) (Griewank and Walther 2000, with each step
// evaluated at most twice), and about sqrt(2n) activations for n layers: within Chen et al. 2016's
// 2 sqrt(n), with one extra forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "rematkit/budget_solver.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit {
namespace {

constexpr int64_t kElements = 65536;
constexpr int64_t kActivation = kElements * 4;  // bytes of one f32 layer output

Program chain(int layers) {
  const std::string t = "f32[" + std::to_string(kElements) + "]";
  std::string body, last = "b";
  for (int i = 0; i < layers; ++i) {
    body += "          v" + std::to_string(i) + ":" + t + " = sin " + last + "\n";
    last = "v" + std::to_string(i);
  }
  const std::string text = "{ lambda ; x:" + t + ". let\n    a:" + t + " = checkpoint[\n      differentiated=False\n" +
                           "      jaxpr={ lambda ; b:" + t + ". let\n" + body + "        in (" + last + ",) }\n" +
                           "      policy=everything_saveable\n      prevent_cse=True\n    ] x\n" +
                           "    l:f32[] = reduce_sum[axes=(0,) out_sharding=None] a\n  in (l,) }\n";
  return parse_program(text, "chain" + std::to_string(layers));
}

BudgetSolution smallest(int layers, double seconds = 8.0) {
  BudgetOptions o;
  o.budget = parse_budget("0", "test");
  o.backends.preference = {"reference"};
  o.backends.threads = 1;
  o.time_limit_seconds = seconds;
  return solve_budget(chain(layers), o);
}

// Revolve with one recomputation: the fewest activations, beyond one layer's, that reverse n layers.
int revolve_activations(int layers) {
  int s = 0;
  while ((s + 1) * (s + 2) / 2 < layers) ++s;
  return s;
}

TEST(UniformChain, TheSmallestPeakIsRevolvesBinomialBound) {
  if (!budget_solver_is_exact()) GTEST_SKIP() << "built without COIN-OR CBC";
  const int64_t one_layer = smallest(1).peak_bytes;
  // The ends of the bound's steps: 3 = C(3,2) layers take 1 activation, 4 take 2, 6 = C(4,2) take 2,
  // 7 take 3 and 10 = C(5,2) take 3.
  for (int layers : {3, 4, 6, 7, 10}) {
    const BudgetSolution s = smallest(layers);
    EXPECT_EQ(s.peak_bytes - one_layer, revolve_activations(layers) * kActivation) << layers << " layers";
    EXPECT_EQ(s.peak_bytes, s.smallest_peak) << layers;
    // everything_saveable keeps every layer's cos: one activation per layer beyond the first.
    EXPECT_EQ(s.everything_peak - one_layer, (layers - 1) * kActivation) << layers;
  }
}

TEST(UniformChain, SixteenLayersTakeAboutTwiceTheirRootAtTheCostOfOneForwardPass) {
  if (!budget_solver_is_exact()) GTEST_SKIP() << "built without COIN-OR CBC";
  const int layers = 16;
  const int64_t one_layer = smallest(1).peak_bytes;
  // A limit long enough for a slow machine (a sanitizer build): CBC stops once it has proved the
  // smallest peak, well before it here.
  const BudgetSolution s = smallest(layers, 40.0);
  const double activations = static_cast<double>(s.peak_bytes - one_layer) / kActivation;
  EXPECT_LE(activations, 2 * std::sqrt(layers));
  EXPECT_LT(s.peak_bytes, s.everything_peak);
  // One extra forward pass at most: each layer's sin and cos (one FLOP per element each) once.
  EXPECT_LE(s.recompute_flops, 2.0 * layers * kElements);
  EXPECT_GT(s.recompute_flops, 0.0);
}

}  // namespace
}  // namespace rematkit
