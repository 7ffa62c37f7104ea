// Step programs over the reference residual cases: the buffers that outlive the forward pass are
// exactly the residuals JAX reports, and running one reaches exactly the peak its arena layout
// predicts, on every backend.
#include "rematkit/schedule/step_program.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

class StepProgramTest : public ::testing::TestWithParam<ResidualCase> {};

TEST_P(StepProgramTest, KeepsExactlyTheResidualsAcrossThePasses) {
  const Linearization lin = linearize_with(load_program(GetParam().program_path));
  const StepProgram program = build_step_program(lin, BackendOptions{}, Pass::kBackward, InputMode::kLoadedEachRun);
  // Literals are loaded again where they are read; every other residual stays in its buffer.
  std::multiset<ValueId> expected, kept(program.kept_values().begin(), program.kept_values().end());
  for (const Residual& r : lin.residuals)
    if (lin.graph.values[r.value].origin != ValueOrigin::kLiteral) expected.insert(r.value);
  EXPECT_EQ(kept, expected);
}

TEST_P(StepProgramTest, MeasuredPeakIsThePredictedPeakOnEveryBackend) {
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 11);
  const Linearization lin = linearize_with(program);
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    BackendOptions options;
    options.preference = {backend, "reference"};
    OneShotRunner runner(lin, options);
    for (int run = 0; run < 2; ++run) {  // the second run reuses the arena
      runner.run(in.constants, in.arguments);
      for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
        EXPECT_EQ(runner.measured_peak(space), runner.layout().arena(space)) << memory_space_name(space);
    }
    int64_t residual_bytes = 0;
    for (const Residual& r : lin.residuals) residual_bytes += aligned_bytes(r.type.bytes());
    EXPECT_GE(runner.layout().arena(MemorySpace::kDevice) + runner.layout().arena(MemorySpace::kPinnedHost), residual_bytes);
  }
}

TEST_P(StepProgramTest, ResidentInputsGiveTheSameBitsAndStayIntact) {
  // A resident program keeps its inputs in the arena for the whole step: no buffer may overwrite
  // them, results must be those of a program that loads them each run, and the residuals kept the same.
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 13);
  const Linearization lin = linearize_with(program);
  for (const std::string& backend : default_plugins().backend_names()) {
    SCOPED_TRACE(backend);
    BackendOptions options;
    options.preference = {backend, "reference"};
    OneShotRunner loaded(lin, options);
    ResidentRunner resident(lin, options);
    const std::vector<ValueId>& resident_kept = resident.program().kept_values();
    const std::vector<ValueId>& loaded_kept = loaded.program().kept_values();
    EXPECT_EQ(std::multiset<ValueId>(resident_kept.begin(), resident_kept.end()),
              std::multiset<ValueId>(loaded_kept.begin(), loaded_kept.end()));
    for (size_t i = 0; i < in.constants.size(); ++i) resident.write_constant(i, in.constants[i]);
    for (size_t i = 0; i < in.arguments.size(); ++i) resident.write_argument(i, in.arguments[i]);
    const GradientResult expected = loaded.run(in.constants, in.arguments);
    for (int run = 0; run < 2; ++run) {
      resident.run();
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
        EXPECT_EQ(resident.measured_peak(space), resident.layout().arena(space)) << memory_space_name(space);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reference, StepProgramTest, ::testing::ValuesIn(residual_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(StepProgram, AChainOfSinesKeepsOneCosinePerLayerUnlessRecomputed) {
  // x:f32[64] through four sines. Saving everything keeps the cosine of each layer's input; with
  // nothing_saveable around the whole program only x is kept and the backward pass rebuilds the chain.
  const Program program = parse_program(R"({ lambda ; x:f32[64]. let
      a:f32[64] = sin x
      b:f32[64] = sin a
      c:f32[64] = sin b
      d:f32[64] = sin c
    in (d,) })", "chain");
  const Linearization saved = linearize_with(program), recomputed = linearize_with(program, "nothing_saveable");
  const StepProgram save_program = build_step_program(saved, BackendOptions{}, Pass::kBackward,
                                                     InputMode::kLoadedEachRun);
  const StepProgram remat_program = build_step_program(recomputed, BackendOptions{}, Pass::kBackward,
                                                      InputMode::kLoadedEachRun);
  auto primitives = [](const Linearization& lin, const std::vector<ValueId>& values) {
    std::multiset<std::string> out;
    for (ValueId v : values) {
      const Value& value = lin.graph.values[v];
      out.insert(value.origin == ValueOrigin::kEquation ? std::string(prim_name(lin.graph.eqns[value.producer].prim)) : value.name);
    }
    return out;
  };
  EXPECT_EQ(primitives(saved, save_program.kept_values()), (std::multiset<std::string>{"cos", "cos", "cos", "cos"}));
  EXPECT_EQ(primitives(recomputed, remat_program.kept_values()), (std::multiset<std::string>{"x"}));
  // At the forward readout the four cosines and d are alive at least: 5 x 256 bytes.
  EXPECT_GE(save_program.layout().live_peak(MemorySpace::kDevice), 5 * 256);
}

}  // namespace
}  // namespace rematkit::testing

namespace rematkit::testing {
namespace {

TEST(StepRunners, CallerMistakesAreUsageErrors) {
  const Program program = parse_program("{ lambda ; x:f32[3] w:f32[3]. let y:f32[3] = mul x w; "
                                        "s:f32[] = reduce_sum[axes=(0,)] y in (s,) }", "p");
  const Linearization lin = linearize_with(program);
  const Tensor three = Tensor::filled(Type{DType::kF32, {3}}, 1.0);
  OneShotRunner one_shot(lin, BackendOptions{});
  EXPECT_EQ(usage_error([&] { one_shot.run({}, {three}); }), "the program takes 2 arguments, not 1");
  EXPECT_EQ(usage_error([&] { one_shot.run({}, {three, Tensor::filled(Type{DType::kF32, {4}}, 1.0)}); }),
            "argument 1 is f32[4] where the program has f32[3]");
  const std::vector<Tensor> no_cotangents;
  EXPECT_EQ(usage_error([&] { one_shot.run({}, {three, three}, &no_cotangents); }),
            "the program takes 1 output cotangents, not 0");
  ResidentRunner resident(lin, BackendOptions{});
  EXPECT_EQ(usage_error([&] { resident.write_argument(2, three); }), "the program has 2 arguments; there is no argument 2");
  EXPECT_EQ(usage_error([&] { resident.write_argument(0, Tensor::filled(Type{DType::kF32, {2}}, 1.0)); }),
            "argument 0 has shape f32[2] where the program has f32[3]");
  EXPECT_EQ(usage_error([&] { resident.read_gradient(5); }), "the program has 2 arguments; there is no argument 5");
  EXPECT_EQ(usage_error([&] { resident.output_data(1); }), "the program has 1 outputs; there is no output 1");
}

}  // namespace
}  // namespace rematkit::testing
