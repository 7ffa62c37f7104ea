// Gradient plans over the reference residual cases: the buffers that outlive the forward pass are
// exactly the residuals JAX reports, and running a plan reaches exactly the peak its memory plan
// predicts, on every backend.
#include "rematkit/gradient_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "rematkit/plugin_registry.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

class GradientPlanTest : public ::testing::TestWithParam<ResidualCase> {};

TEST_P(GradientPlanTest, KeepsExactlyTheResidualsAcrossThePasses) {
  const Linearization lin = linearize_with(load_program(GetParam().program_path));
  const GradientPlan plan(lin, BackendOptions{});
  // Literals are loaded again where they are read; every other residual stays in its buffer.
  std::multiset<ValueId> expected, kept(plan.kept_values().begin(), plan.kept_values().end());
  for (const Residual& r : lin.residuals)
    if (lin.graph.values[r.value].origin != ValueOrigin::kLiteral) expected.insert(r.value);
  EXPECT_EQ(kept, expected);
}

TEST_P(GradientPlanTest, MeasuredPeakIsThePredictedPeakOnEveryBackend) {
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 11);
  const Linearization lin = linearize_with(program);
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    BackendOptions options;
    options.preference = {backend, "reference"};
    GradientPlan plan(lin, options);
    for (int run = 0; run < 2; ++run) {  // the second run reuses the arena
      plan.run(in.constants, in.arguments);
      for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
        EXPECT_EQ(plan.measured_peak(space), plan.memory().arena(space)) << memory_space_name(space);
    }
    int64_t residual_bytes = 0;
    for (const Residual& r : lin.residuals) residual_bytes += aligned_bytes(r.type.bytes());
    EXPECT_GE(plan.memory().arena(MemorySpace::kDevice) + plan.memory().arena(MemorySpace::kPinnedHost), residual_bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, GradientPlanTest, ::testing::ValuesIn(residual_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(GradientPlan, AChainOfSinesKeepsOneCosinePerLayerUnlessRecomputed) {
  // x:f32[64] through four sines. Saving everything keeps the cosine of each layer's input; with
  // nothing_saveable around the whole program only x is kept and the backward pass rebuilds the chain.
  const Program program = parse_program(R"({ lambda ; x:f32[64]. let
      a:f32[64] = sin x
      b:f32[64] = sin a
      c:f32[64] = sin b
      d:f32[64] = sin c
    in (d,) })", "chain");
  const Linearization saved = linearize_with(program), recomputed = linearize_with(program, "nothing_saveable");
  const GradientPlan save_plan(saved, BackendOptions{}), remat_plan(recomputed, BackendOptions{});
  auto primitives = [](const Linearization& lin, const std::vector<ValueId>& values) {
    std::multiset<std::string> out;
    for (ValueId v : values) {
      const Value& value = lin.graph.values[v];
      out.insert(value.origin == ValueOrigin::kEquation ? std::string(prim_name(lin.graph.eqns[value.producer].prim)) : value.name);
    }
    return out;
  };
  EXPECT_EQ(primitives(saved, save_plan.kept_values()), (std::multiset<std::string>{"cos", "cos", "cos", "cos"}));
  EXPECT_EQ(primitives(recomputed, remat_plan.kept_values()), (std::multiset<std::string>{"x"}));
  // At the forward readout the four cosines and d are alive at least: 5 x 256 bytes.
  EXPECT_GE(save_plan.memory().live_peak(MemorySpace::kDevice), 5 * 256);
}

}  // namespace
}  // namespace rematkit::testing
