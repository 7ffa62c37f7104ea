#include "support/fused_runs.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit::testing {

std::vector<Tensor> run_fused(const Linearization& lin, const RandomInputs& in, const std::vector<std::string>& backends,
                              std::vector<std::string>& fused_steps) {
  BackendOptions options{backends, &default_plugins()};
  StepProgram steps = build_step_program(lin, options, Pass::kForward, InputMode::kLoadedEachRun, FusionChoice{});
  for (const Step& step : steps.steps())
    if (step.kernel && step.kernel->backend() != backends.front()) fused_steps.push_back("unfused on " + step.kernel->backend());
    else if (!step.fused.empty()) {
      std::string text = step.kernel->backend() + ":";
      for (size_t i = 0; i < step.fused.size(); ++i)
        text += std::string(i ? " + " : " ") + std::string(prim_name(steps.linearization().graph.eqns[step.fused[i]].prim));
      fused_steps.push_back(text);
    }
  return OneShotRunner(std::move(steps), options).run(in.constants, in.arguments).outputs;
}

void expect_fused_reference_bits(const Linearization& lin, const RandomInputs& in) {
  std::vector<std::string> fused, none;
  const std::vector<Tensor> got = run_fused(lin, in, {"highway", "reference"}, fused);
  const std::vector<Tensor> expected = run_fused(lin, in, {"reference"}, none);
  ASSERT_FALSE(fused.empty());
  for (const std::string& step : fused) EXPECT_EQ(step.rfind("highway:", 0), 0u) << step;
  ASSERT_EQ(got.size(), expected.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].data.size(), expected[o].data.size());
    size_t differ = 0;
    for (size_t i = 0; i < got[o].data.size(); ++i)
      differ += std::bit_cast<uint64_t>(got[o].data[i]) != std::bit_cast<uint64_t>(expected[o].data[i]);
    EXPECT_EQ(differ, 0u) << "output " << o;
  }
}

}  // namespace rematkit::testing
