// SGD training steps on least squares, against the gradient worked out by hand: 2 X^T (X w - y).
#include "rematkit/runtime/training_step.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const char* kLeastSquares = R"({ lambda x:f32[4,3] y:f32[4]; w:f32[3]. let
    p:f32[4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    d:f32[4] = sub p y
    s:f32[4] = square d
    l:f32[] = reduce_sum[axes=(0,)] s
  in (l,) })";

TEST(TrainingStep, SgdOnLeastSquaresFollowsTheHandGradient) {
  const Program program = parse_program(kLeastSquares, "least_squares");
  const std::vector<std::vector<double>> x = {{1, 0.5, -1}, {0, 2, 1}, {-1, 1, 0.25}, {0.5, -0.5, 2}};
  const std::vector<double> y = {1, -2, 0.5, 3};
  const std::vector<Tensor> constants = {
      Tensor{Type{DType::kF32, {4, 3}}, {1, 0.5, -1, 0, 2, 1, -1, 1, 0.25, 0.5, -0.5, 2}},
      Tensor{Type{DType::kF32, {4}}, y}};
  for (const std::string& backend : default_plugins().backend_names()) {
    for (const char* policy : {"everything_saveable", "nothing_saveable"}) {
      SCOPED_TRACE(backend + ", " + std::string(policy));
      const Linearization lin = linearize_with(program, policy);
      TrainingStep step(lin, BackendOptions{{backend, "reference"}, &default_plugins()}, {0}, 0.02);
      step.set_constants(constants);
      step.set_arguments({Tensor{Type{DType::kF32, {3}}, {0.1, -0.2, 0.3}}});
      double previous = 1e300;
      for (int iteration = 0; iteration < 25; ++iteration) {
        const std::vector<double> w = step.argument(0).data;
        std::vector<double> residual(4), grad(3, 0.0);
        double loss = 0;
        for (size_t i = 0; i < 4; ++i) {
          residual[i] = x[i][0] * w[0] + x[i][1] * w[1] + x[i][2] * w[2] - y[i];
          loss += residual[i] * residual[i];
          for (size_t j = 0; j < 3; ++j) grad[j] += 2 * x[i][j] * residual[i];
        }
        EXPECT_NEAR(step.run(), loss, 1e-5 * std::max(1.0, loss));
        const std::vector<double> updated = step.argument(0).data;
        for (size_t j = 0; j < 3; ++j) {
          EXPECT_NEAR(step.gradient(0)->data[j], grad[j], 1e-5 * std::max(1.0, std::fabs(grad[j])));
          EXPECT_NEAR(updated[j], w[j] - 0.02 * grad[j], 1e-6);
        }
        EXPECT_LT(loss, previous);  // a small enough step on a convex quadratic always descends
        previous = loss;
      }
    }
  }
}

TEST(TrainingStep, NeedsAScalarLossAndFloatingParams) {
  const Program vector_output = parse_program("{ lambda ; w:f32[3]. let s:f32[3] = sin w in (s,) }", "v");
  EXPECT_THROW(TrainingStep(linearize_with(vector_output), BackendOptions{}, {0}, 0.1), Error);
  const Program program = parse_program(kLeastSquares, "least_squares");
  EXPECT_THROW(TrainingStep(linearize_with(program), BackendOptions{}, {1}, 0.1), Error);
}

}  // namespace
}  // namespace rematkit::testing
