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

TEST_P(GradientPlanTest, ResidentInputsGiveTheSameBitsAndStayIntact) {
  // A resident plan keeps its inputs in the arena for the whole step: no buffer may overwrite
  // them, results must be those of a plan that loads them each run, and the residuals kept the same.
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 13);
  const Linearization lin = linearize_with(program);
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    BackendOptions options;
    options.preference = {backend, "reference"};
    GradientPlan loaded(lin, options);
    GradientPlan resident(lin, options, GradientPlan::Passes::kForwardAndBackward, GradientPlan::Inputs::kResident);
    EXPECT_EQ(std::multiset<ValueId>(resident.kept_values().begin(), resident.kept_values().end()),
              std::multiset<ValueId>(loaded.kept_values().begin(), loaded.kept_values().end()));
    for (size_t i = 0; i < in.constants.size(); ++i) resident.write_constant(i, in.constants[i]);
    for (size_t i = 0; i < in.arguments.size(); ++i) resident.write_argument(i, in.arguments[i]);
    const GradientResult expected = loaded.run(in.constants, in.arguments);
    for (int run = 0; run < 2; ++run) {
      resident.run_resident();
      for (size_t i = 0; i < expected.outputs.size(); ++i) EXPECT_EQ(resident.read_output(i).data, expected.outputs[i].data);
      for (size_t i = 0; i < expected.gradients.size(); ++i) {
        ASSERT_EQ(resident.read_gradient(i).has_value(), expected.gradients[i].has_value());
        if (expected.gradients[i]) {
          EXPECT_EQ(resident.read_gradient(i)->data, expected.gradients[i]->data);
        }
      }
      for (size_t i = 0; i < in.arguments.size(); ++i) {
        std::vector<double> as_stored = in.arguments[i].data;
        if (in.arguments[i].type.dtype == DType::kF32)
          for (double& x : as_stored) x = static_cast<float>(x);
        EXPECT_EQ(resident.read_argument(i).data, as_stored) << "argument " << i;
      }
      for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
        EXPECT_EQ(resident.measured_peak(space), resident.memory().arena(space)) << memory_space_name(space);
    }
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
