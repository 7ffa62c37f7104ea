// Step times (step_times.hpp, StepRunner::time_steps): a runner's clock and the rows summed from it.
// Rows for y = sin(x) * w * x worked out by hand, fused and not, with a distinct power of two per
// step so that each row's sum shows which steps it took; a runner's times, on only while asked.
#include "rematkit/analysis/step_times.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <set>
#include <tuple>

#include "rematkit/ir/error.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

const char* kChain = "{ lambda ; x:f32[64] w:f32[64]. let\n"
                     "    a:f32[64] = sin x\n"
                     "    b:f32[64] = mul a w\n"
                     "    c:f32[64] = mul b x\n"
                     "  in (c,) }\n";

// Step s took 2^s ns: a row's sum has a bit per step it took.
std::vector<int64_t> powers_of_two(size_t steps) {
  std::vector<int64_t> ns;
  for (size_t s = 0; s < steps; ++s) ns.push_back(int64_t{1} << s);
  return ns;
}

using RowKey = std::tuple<std::string, std::string, std::string, int64_t>;

std::set<RowKey> keys_of(const std::vector<StepTimeRow>& rows) {
  std::set<RowKey> keys;
  for (const StepTimeRow& r : rows) keys.insert({r.backend, r.what, r.dtype, r.steps});
  return keys;
}

// Each row's steps are its own (a bit each, none shared), every step is in one, longest first.
void expect_partition(const std::vector<StepTimeRow>& rows, size_t steps) {
  int64_t all = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(std::popcount(static_cast<uint64_t>(rows[i].ns)), rows[i].steps) << rows[i].what;
    EXPECT_EQ(all & rows[i].ns, 0) << rows[i].what;
    all |= rows[i].ns;
    if (i > 0) {
      EXPECT_GE(rows[i - 1].ns, rows[i].ns);
    }
  }
  EXPECT_EQ(all, (int64_t{1} << steps) - 1);
}

TEST(StepTimes, SumPerBackendPrimitiveAndDtype) {
  const Linearization lin = linearize_with(parse_program(kChain, "chain.jaxpr"));
  BackendOptions options{{"reference"}, &default_plugins()};
  options.fusion = BackendOptions::Fusion::kOff;
  const StepProgram program = build_step_program(lin, options, Pass::kForward, InputMode::kLoadedEachRun);
  // Two loads; four kernels: sin, its derivative's coefficient cos (the forward pass of a
  // linearization computes it, as JAX's jvp of sin does), two muls; one readout of the result.
  ASSERT_EQ(program.steps().size(), 7u);
  const std::vector<StepTimeRow> rows = step_time_rows(program, powers_of_two(7));
  EXPECT_EQ(keys_of(rows), (std::set<RowKey>{{"load", "", "f32", 2},
                                             {"reference", "sin", "f32", 1},
                                             {"reference", "cos", "f32", 1},
                                             {"reference", "mul", "f32", 2},
                                             {"readout", "", "", 1}}));
  expect_partition(rows, 7);
  // The readout runs last, so its one step outweighs all before it.
  EXPECT_EQ(rows.front().backend, "readout");
}

TEST(StepTimes, NameAFusedKernelByItsPrimitivesInOrder) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Linearization lin = linearize_with(parse_program(kChain, "chain.jaxpr"));
  BackendOptions options{{"highway", "reference"}, &default_plugins()};
  options.fusion = BackendOptions::Fusion::kUnlessPeakRises;
  const StepProgram program = build_step_program(lin, options, Pass::kForward, InputMode::kLoadedEachRun, FusionChoice{});
  ASSERT_EQ(program.steps().size(), 4u);
  const std::vector<StepTimeRow> rows = step_time_rows(program, powers_of_two(4));
  EXPECT_EQ(keys_of(rows),
            (std::set<RowKey>{{"load", "", "f32", 2}, {"highway", "sin+cos+mul+mul", "f32", 1}, {"readout", "", "", 1}}));
  expect_partition(rows, 4);
}

TEST(StepTimes, RefuseTimesOfAnotherProgram) {
  const Linearization lin = linearize_with(parse_program(kChain, "chain.jaxpr"));
  const StepProgram program =
      build_step_program(lin, BackendOptions{{"reference"}, &default_plugins()}, Pass::kForward, InputMode::kLoadedEachRun);
  EXPECT_THROW(step_time_rows(program, {1, 2, 3}), Error);
}

// Off, a run leaves the times as they were; on, every kernel step has taken some time, and all of
// them together no more than the runs.
TEST(StepTimes, ARunnerTimesItsStepsOnlyWhileAsked) {
  const Program p = parse_program(kChain, "chain.jaxpr");
  const Linearization lin = linearize_with(p);
  const RandomInputs in = random_inputs(p, 3);
  OneShotRunner runner(lin, BackendOptions{{"reference"}, &default_plugins()});
  runner.run(in.constants, in.arguments);
  EXPECT_TRUE(runner.step_ns().empty());
  runner.time_steps(true);
  const auto started = std::chrono::steady_clock::now();
  runner.run(in.constants, in.arguments);
  runner.run(in.constants, in.arguments);
  const int64_t wall =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
  const std::vector<int64_t> timed = runner.step_ns();
  ASSERT_EQ(timed.size(), runner.program().steps().size());
  int64_t total = 0;
  for (size_t s = 0; s < timed.size(); ++s) {
    if (runner.program().steps()[s].kind == StepKind::kKernel) {
      EXPECT_GT(timed[s], 0) << s;
    }
    total += timed[s];
  }
  EXPECT_LE(total, wall);
  runner.time_steps(false);
  runner.run(in.constants, in.arguments);
  EXPECT_EQ(runner.step_ns(), timed);
}

}  // namespace
}  // namespace rematkit::testing
