// A sweep model's program printed as jaxpr text (`rematkit program`) and read back answers as the
// model it came from: the same residuals, the same planned peak, the same budget solution.
#include <gtest/gtest.h>

#include "rematkit/budget_solver.hpp"
#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/ir/program_edits.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"

namespace rematkit {
namespace {

// The residual lines without where they come from: the built program's equations have no place in
// a file, the read-back ones do.
std::vector<std::string> residuals_without_places(const Linearization& lin) {
  std::vector<std::string> out;
  for (std::string line : residual_lines(lin)) out.push_back(line.substr(0, line.find(" from ")));
  return out;
}

int64_t planned_peak(const Linearization& lin) {
  OneShotRunner runner(lin, BackendOptions{{"highway", "reference"}, nullptr});
  return runner.layout().arena(MemorySpace::kDevice);
}

class SweepProgramText : public testing::TestWithParam<const char*> {};

TEST_P(SweepProgramText, ReadsBackWithTheModelsAnswers) {
  const sweep::SweepConfig config =
      sweep::parse_sweep(std::string("models:\n  - ") + GetParam() + "\npolicies: [everything_saveable]\nbackends: [reference]\n", "<test>");
  const sweep::ModelProgram m = sweep::model_program(config.models[0], "dots_saveable");  // as `rematkit program` prints it
  const std::string text = print_program(m.program);
  const Program back = parse_program(text, "printed.jaxpr");
  ASSERT_EQ(back.invars.size(), m.program.invars.size());

  for (const char* policy : {"dots_saveable", "nothing_saveable"}) {
    SCOPED_TRACE(policy);
    LinearizeOptions lo;
    lo.policies = &default_plugins().policies();
    lo.differentiate = m.trained;
    const Linearization built = linearize(retarget_checkpoint_policies(m.program, policy, "test"), lo);
    const Linearization read = linearize(retarget_checkpoint_policies(back, policy, "test"), lo);
    ASSERT_FALSE(built.residuals.empty());
    EXPECT_EQ(residuals_without_places(read), residuals_without_places(built));
    EXPECT_EQ(planned_peak(read), planned_peak(built));
  }

  // The budget solver's view: the same candidates and the same ends of a fraction's range (the
  // fixed policies' and the structured answer's planned peaks). Budget 1, everything saved, is
  // answered once they are known.
  BudgetOptions options;
  options.budget = parse_budget("1", "test");
  options.backends.preference = {"highway", "reference"};
  options.backends.threads = 1;
  options.differentiate = m.trained;
  options.time_limit_seconds = 8;
  const BudgetSolution built = solve_budget(m.program, options);
  const BudgetSolution read = solve_budget(back, options);
  EXPECT_EQ(read.budget_bytes, built.budget_bytes);
  EXPECT_EQ(read.everything_peak, built.everything_peak);
  EXPECT_EQ(read.fraction_zero_peak, built.fraction_zero_peak);
  EXPECT_EQ(read.equations.size(), built.equations.size());
}

INSTANTIATE_TEST_SUITE_P(
    Models, SweepProgramText,
    testing::Values("mlp: {input: 16, depth: 3, width: 16, batch: 4, activation: tanh, remat: per_layer}",
                    "mlp: {input: 16, depth: 4, width: 16, batch: 4, activation: relu, loop: scan, remat: per_layer}",
                    "transformer: {layers: 2, batch: 2, sequence: 8, model: 16, heads: 2, mlp: 32, remat: per_layer}",
                    "gpt: {layers: 2, batch: 1, sequence: 8, model: 16, heads: 2, vocab: 32, dropout: 0.1, remat: per_layer}",
                    "gpt: {layers: 2, batch: 1, sequence: 8, model: 16, heads: 2, vocab: 32, dtype: bf16, loop: scan, remat: per_layer}",
                    "llama: {layers: 2, batch: 1, sequence: 8, model: 16, heads: 4, kv_heads: 2, vocab: 32, remat: per_layer}",
                    "cnn: {batch: 2, image: 8, channels: 3, blocks: [4, 8], downsample: true, classes: 10, remat: per_layer}"));

}  // namespace
}  // namespace rematkit
