// On one backend, a gradient does not depend on the policy, on the thread count, or on whether the
// policies' step programs run one by one or all at once: bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "rematkit/runtime/concurrent_gradients.hpp"
#include "rematkit/analysis/gradient_difference.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// An MLP layer pair and a batched attention-score product, large enough that the SIMD backends
// split their GEMMs and reductions across threads.
const char* kProgram = R"({ lambda ; x:f32[32,64] w1:f32[64,96] w2:f32[96,48] q:f32[4,16,8] k:f32[4,16,8]. let
    h:f32[32,96] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
    a:f32[32,96] = tanh h
    o:f32[32,48] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a w2
    s:f32[32,48] = sin o
    l:f32[] = reduce_sum[axes=(0, 1)] s
    t:f32[4,16,16] = dot_general[dimension_numbers=(([2], [2]), ([0], [0]))] q k
    e:f32[4,16,16] = logistic t
    m:f32[] = reduce_sum[axes=(0, 1, 2)] e
  in (l, m) })";

const std::vector<std::string> kPolicies = {"everything_saveable", "nothing_saveable", "dots_saveable",
                                            "dots_with_no_batch_dims_saveable"};

void expect_bitwise_equal(const GradientResult& expected, const GradientResult& actual, const std::string& what) {
  ASSERT_EQ(expected.gradients.size(), actual.gradients.size()) << what;
  for (size_t a = 0; a < expected.gradients.size(); ++a) {
    ASSERT_TRUE(expected.gradients[a] && actual.gradients[a]) << what;
    EXPECT_EQ(expected.gradients[a]->data, actual.gradients[a]->data) << what << ", argument " << a;
  }
}

TEST(Determinism, AcrossPoliciesThreadCountsAndConcurrency) {
  const Program program = parse_program(kProgram, "determinism");
  const RandomInputs in = random_inputs(program, 3);
  std::vector<Linearization> lins;
  for (const std::string& policy : kPolicies) lins.push_back(linearize_with(program, policy));
  std::vector<const Linearization*> all;
  for (const Linearization& lin : lins) all.push_back(&lin);

  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    BackendOptions options{{backend, "reference"}, &default_plugins()};
    options.threads = 1;
    const GradientResult baseline = run_gradients({all[0]}, in.constants, in.arguments, options, Concurrency::kOneByOne)[0];
    for (int threads : {1, 2}) {
      options.threads = threads;
      const std::vector<GradientResult> each = run_gradients(all, in.constants, in.arguments, options, Concurrency::kOneByOne);
      for (size_t p = 0; p < kPolicies.size(); ++p)
        expect_bitwise_equal(baseline, each[p], kPolicies[p] + " on " + std::to_string(threads) + " thread(s)");
    }
    const std::vector<GradientResult> together = run_gradients(all, in.constants, in.arguments, options, Concurrency::kAllAtOnce);
    for (size_t p = 0; p < kPolicies.size(); ++p) expect_bitwise_equal(baseline, together[p], kPolicies[p] + " run all at once");
  }
}

TEST(Determinism, GradientDifferencesCompareBytesAndMeasureTheGap) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto result = [](std::vector<std::optional<Tensor>> gradients) { return GradientResult{{}, std::move(gradients)}; };
  const GradientResult a = result({tensor_of({3}, {1.0, 0.0, nan}), tensor_of({2}, {2.0, 3.0}), std::nullopt,
                                   tensor_of({1}, {5.0})});
  // Argument 0: 0 against -0, the same value in other bytes; 1: 3 against 3.5; 2: no gradient on
  // either side; 3: a gradient on one side only.
  const GradientResult b = result({tensor_of({3}, {1.0, -0.0, nan}), tensor_of({2}, {2.0, 3.5}), std::nullopt,
                                   std::nullopt});
  const std::vector<ArgumentDifference> d = gradient_differences(a, b);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_FALSE(d[0].identical);
  EXPECT_EQ(d[0].max_abs_diff, 0.0);
  EXPECT_FALSE(d[1].identical);
  EXPECT_EQ(d[1].max_abs_diff, 0.5);
  EXPECT_TRUE(d[2].identical);
  EXPECT_FALSE(d[3].identical);
  EXPECT_TRUE(std::isinf(d[3].max_abs_diff));
  EXPECT_TRUE(std::isinf(max_abs_difference(d)));
  EXPECT_EQ(max_abs_difference({d[0], d[1], d[2]}), 0.5);
  // Itself: the same bytes everywhere, NaN included. A NaN against a number is a NaN gap.
  for (const ArgumentDifference& same : gradient_differences(a, a)) EXPECT_TRUE(same.identical);
  const std::vector<ArgumentDifference> to_number = gradient_differences(result({tensor_of({1}, {nan})}),
                                                                         result({tensor_of({1}, {1.0})}));
  EXPECT_FALSE(to_number[0].identical);
  EXPECT_TRUE(std::isnan(to_number[0].max_abs_diff));
  EXPECT_TRUE(std::isnan(max_abs_difference({d[1], to_number[0]})));
  EXPECT_THROW(gradient_differences(a, result({})), Error);
}

TEST(Determinism, AnErrorInOneConcurrentPlanReachesTheCaller) {
  const Program program = parse_program(kProgram, "determinism");
  const RandomInputs in = random_inputs(program, 3);
  const Linearization lin = linearize_with(program);
  BackendOptions options{{"no_such_backend"}, &default_plugins()};
  EXPECT_THROW(run_gradients({&lin, &lin}, in.constants, in.arguments, options, Concurrency::kAllAtOnce), Error);
  options = BackendOptions{{"reference"}, &default_plugins()};
  options.threads = -1;
  EXPECT_THROW(run_gradients({&lin}, in.constants, in.arguments, options, Concurrency::kOneByOne), Error);
}

}  // namespace
}  // namespace rematkit::testing
