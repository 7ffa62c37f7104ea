// SGD training steps on least squares, against the gradient worked out by hand: 2 X^T (X w - y).
#include "rematkit/runtime/training_step.hpp"

#include <gtest/gtest.h>

#include <bit>
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

// A bf16 param's SGD: p - lr * g in f32 (lr * g rounded to f32 first, as an f32 optimizer), stored
// rounded to nearest even; over a million elements, so the update runs in parallel chunks.
TEST(TrainingStep, Bf16ParamsTakeTheF32DifferenceRoundedToNearestEven) {
  constexpr size_t n = (size_t{1} << 20) + 3;
  const std::string size = std::to_string(n);
  const Program program = parse_program("{ lambda c:bf16[" + size + "]; w:bf16[" + size + "]. let p:bf16[" + size +
                                            "] = mul w c; l:bf16[] = reduce_sum[axes=(0,)] p in (l,) }",
                                        "bf16_sgd");
  auto to_bf16 = [](double v) {  // round to nearest even on an f32's top half
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    return static_cast<double>(std::bit_cast<float>((bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u));
  };
  Tensor c{Type{DType::kBF16, {static_cast<int64_t>(n)}}, std::vector<double>(n)};
  Tensor w = c;
  for (size_t i = 0; i < n; ++i) {  // magnitudes from 2^-12 to 2^12 apart, so the rounding decides
    c.data[i] = to_bf16(std::ldexp(1.0 + static_cast<double>(i % 97) / 97, static_cast<int>(i % 25) - 12));
    w.data[i] = to_bf16((i % 2 ? -1.0 : 1.0) * (0.5 + static_cast<double>(i % 89) / 89));
  }
  const float lr = 0.02f;
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    TrainingStep step(linearize_with(program, "everything_saveable"),
                      BackendOptions{{backend, "reference"}, &default_plugins()}, {0}, lr);
    step.set_constants({c});
    step.set_arguments({w});
    step.run();
    const Tensor updated = step.argument(0);
    size_t wrong = 0, moved = 0;
    for (size_t i = 0; i < n; ++i) {
      const float grad_step = lr * static_cast<float>(c.data[i]);
      const double expected = to_bf16(static_cast<float>(w.data[i]) - grad_step);
      wrong += updated.data[i] != expected;
      moved += updated.data[i] != w.data[i];
    }
    EXPECT_EQ(wrong, 0u);
    EXPECT_GT(moved, n / 4);
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
