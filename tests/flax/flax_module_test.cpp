// The Flax module layer: names, RNG stream and remat, the MLP's residuals and gradients, input rules.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "rematkit/flax/nn_remat_policy.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

using flax::NnRematPolicyOptions;

const std::vector<float> kX = {0.5f, -1.25f, 2.0f, 0.75f, -0.3f};

TEST(FlaxMlp, ParamsTreeHasFlaxNamesWithoutARematLevel) {
  const NnRematPolicyOptions options;
  const auto setup = flax::check_nn_remat_policy_inputs(7, kX, 3, options);
  const flax::InitializedModule m = flax::init_remat_mlp(setup, 5, options);
  std::vector<std::vector<std::string>> paths;
  for (const flax::Variable& v : m.params) paths.push_back(v.path);
  const std::vector<std::vector<std::string>> expected = {{"Dense_0", "kernel"}, {"Dense_0", "bias"},
                                                          {"Dense_1", "kernel"}, {"Dense_1", "bias"},
                                                          {"Dense_2", "kernel"}, {"Dense_2", "bias"}};
  EXPECT_EQ(paths, expected);
  EXPECT_EQ(m.params[0].type.shape, (Shape{5, 3}));
  EXPECT_EQ(m.params[2].type.shape, (Shape{3, 3}));
}

TEST(FlaxMlp, RematChangesNeitherTheRngStreamNorTheForward) {
  // Flax >= 0.3.5 passes rngs unchanged through nn.remat: params and outputs are bit-identical.
  for (auto mode : {random::PrngMode::kPartitionable, random::PrngMode::kLegacy}) {
    const auto key = random::prng_key(11);
    const Type x_type{DType::kF32, {5}, MemorySpace::kDevice};
    auto mlp = std::make_shared<flax::MLP>(std::vector<int64_t>{4, 6, 2});
    const flax::InitializedModule plain = flax::init_module(*mlp, key, x_type, {mode, false});
    const flax::InitializedModule remat =
        flax::init_module(flax::Remat(mlp, "dots_with_no_batch_dims_saveable"), key, x_type, {mode, false});
    ASSERT_EQ(plain.params.size(), remat.params.size());
    for (size_t i = 0; i < plain.params.size(); ++i) {
      EXPECT_EQ(plain.params[i].key, remat.params[i].key);
      EXPECT_EQ(plain.params[i].value, remat.params[i].value);
    }
    const auto a = evaluate_program(plain.apply, {}, flax::apply_arguments(plain, kX), Arithmetic::kFloat32);
    const auto b = evaluate_program(remat.apply, {}, flax::apply_arguments(remat, kX), Arithmetic::kFloat32);
    EXPECT_EQ(a.at(0).data, b.at(0).data);
  }
}

TEST(FlaxMlp, ResidualsOfTheGradientAreWhatJaxSaves) {
  // grad of sum(apply(params, x)) under nn.remat with dots_with_no_batch_dims_saveable
  // (jax-checkpoint.md 2.2, 2.5): the params and x are inputs of the checkpoint, saved by the caller
  // when its backward pass reads them: x and every kernel (the dots' tangents), the biases of layers
  // 0 and 1 (relu's mask is recomputed from dot + bias), not the last bias (its add is linear).
  // Of the intermediates only Saveable dots that the backward pass reads are kept: the dots of layers
  // 0 and 1 feed the recomputed relu masks; the last dot feeds only a linear add. Arguments print in
  // JAX's flatten order: x, then the params with their dict keys sorted (bias before kernel).
  const NnRematPolicyOptions options;
  const auto setup = flax::check_nn_remat_policy_inputs(0, kX, 4, options);
  const flax::InitializedModule m = flax::init_remat_mlp(setup, 5, options, true);
  std::vector<std::string> lines;
  for (const std::string& line : residual_lines(linearize_with(m.apply)))
    lines.push_back(line.substr(0, line.find(" from <")));
  const std::vector<std::string> expected = {
      "f32[5] from the argument x",
      "f32[4] from the argument params_Dense_0_bias",
      "f32[5,4] from the argument params_Dense_0_kernel",
      "f32[4] from the argument params_Dense_1_bias",
      "f32[4,4] from the argument params_Dense_1_kernel",
      "f32[4,4] from the argument params_Dense_2_kernel",
      "f32[4] output of dot_general",
      "f32[4] output of dot_general",
  };
  EXPECT_EQ(lines, expected);
}

TEST(FlaxMlp, GradientsAreIdenticalUnderEveryPolicy) {
  const auto setup = flax::check_nn_remat_policy_inputs(5, kX, 6, {});
  std::vector<GradientResult> results;
  for (const char* policy : {"dots_with_no_batch_dims_saveable", "nothing_saveable", "everything_saveable",
                             "dots_saveable", "offload_dot_with_no_batch_dims('device', 'pinned_host')"}) {
    NnRematPolicyOptions options;
    options.policy = policy;
    const flax::InitializedModule m = flax::init_remat_mlp(setup, 5, options, true);
    results.push_back(interpret_gradient(linearize_with(m.apply), {}, flax::apply_arguments(m, kX), Arithmetic::kFloat32));
  }
  for (size_t p = 1; p < results.size(); ++p) {
    EXPECT_EQ(results[p].outputs[0].data, results[0].outputs[0].data);
    for (size_t a = 0; a < results[0].gradients.size(); ++a)
      EXPECT_EQ(results[p].gradients[a]->data, results[0].gradients[a]->data) << "argument " << a;
  }
}

std::string error_of(double seed, std::vector<float> x, double features, NnRematPolicyOptions options = {}) {
  try {
    flax::nn_remat_policy(seed, x, features, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "no error";
}

TEST(FlaxMlp, InputRules) {
  EXPECT_EQ(error_of(0, {}, 4), "x must be a non-empty vector");
  EXPECT_EQ(error_of(0, {1, NAN}, 4), "x[1] is nan: x must be finite");
  EXPECT_EQ(error_of(0, {1, INFINITY}, 4), "x[1] is inf: x must be finite");
  EXPECT_EQ(error_of(0, {1}, 4.5), "features must be a positive integer, got 4.500000");
  EXPECT_EQ(error_of(0, {1}, 0), "features must be a positive integer, got 0.000000");
  EXPECT_EQ(error_of(0, {1}, -1), "features must be a positive integer, got -1.000000");
  EXPECT_EQ(error_of(0, {1}, NAN), "features must be a positive integer, got nan");
  EXPECT_EQ(error_of(0, {1}, INFINITY), "features must be a positive integer, got inf");
  EXPECT_EQ(error_of(-1, {1}, 4), "seed must be a non-negative integer, got -1.000000");
  EXPECT_EQ(error_of(1.5, {1}, 4), "seed must be a non-negative integer, got 1.500000");
  EXPECT_EQ(error_of(9.3e18, {1}, 4), "seed must be below 2^63 (JAX converts it to a 64-bit integer)");
  NnRematPolicyOptions bad_policy;
  bad_policy.policy = "no_such_policy";
  EXPECT_EQ(error_of(0, {1}, 4, bad_policy), "policy: unknown policy 'no_such_policy'");
  // Floats that are integers are fine, and x is only read.
  const std::vector<float> x = {1, 2, 3};
  const std::vector<float> copy = x;
  EXPECT_EQ(flax::nn_remat_policy(7.0, x, 4.0).size(), 4u);
  EXPECT_EQ(x, copy);
}

TEST(FlaxMlp, LargeSeedsFollowJaxX64Off) {
  // PRNGKey narrows the seed to 32 bits: seed and seed + 2^32 give the same MLP.
  EXPECT_EQ(flax::nn_remat_policy(3, kX, 4), flax::nn_remat_policy(3.0 + 4294967296.0, kX, 4));
}

// Initializer statistics against their definitions (independent math, loose statistical bounds).
double stddev(const std::vector<float>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (float x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size()));
}

TEST(Initializers, ScalesFollowVarianceScaling) {
  const random::Key key = random::prng_key(1);
  const Shape shape{200, 300};  // fan_in 200, fan_out 300, fan_avg 250
  const auto mode = random::PrngMode::kPartitionable;
  EXPECT_NEAR(stddev(flax::lecun_normal()(key, shape, mode)), std::sqrt(1.0 / 200), 0.01 * std::sqrt(1.0 / 200));
  EXPECT_NEAR(stddev(flax::he_normal()(key, shape, mode)), std::sqrt(2.0 / 200), 0.01 * std::sqrt(2.0 / 200));
  EXPECT_NEAR(stddev(flax::glorot_normal()(key, shape, mode)), std::sqrt(1.0 / 250), 0.01 * std::sqrt(1.0 / 250));
  // Uniform variants: U(-limit, limit) with limit = sqrt(3 * variance); std = limit / sqrt(3).
  for (float v : flax::he_uniform()(key, shape, mode)) EXPECT_LE(std::fabs(v), std::sqrt(6.0f / 200));
  EXPECT_NEAR(stddev(flax::glorot_uniform()(key, shape, mode)), std::sqrt(1.0 / 250), 0.01 * std::sqrt(1.0 / 250));
  EXPECT_NEAR(stddev(flax::lecun_uniform()(key, shape, mode)), std::sqrt(1.0 / 200), 0.01 * std::sqrt(1.0 / 200));
  EXPECT_NEAR(stddev(flax::normal(0.5f)(key, shape, mode)), 0.5, 0.01);
  for (float v : flax::uniform(2.0f)(key, shape, mode)) EXPECT_TRUE(v >= 0.0f && v < 2.0f);
  EXPECT_EQ(flax::constant(3.0f)(key, {2, 2}, mode), std::vector<float>(4, 3.0f));
  try {
    flax::lecun_normal()(key, {5}, mode);
    FAIL() << "a 1-D kernel has no fan in";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be at least 2-D"), std::string::npos);
  }
}

}  // namespace
}  // namespace rematkit::testing
