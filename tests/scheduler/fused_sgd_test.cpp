// A training step's SGD update inside the kernel that computes the weight's gradient
// (sgd_updates.hpp, fusion_steps.hpp): which params it takes, that it runs after every other reader
// of the param, and that the step it makes is the step the update after the backward pass makes, bit
// for bit on highway (the same kernels, the same two roundings).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "rematkit/parser.hpp"
#include "rematkit/plugin_registry.hpp"
#include "rematkit/step_program.hpp"
#include "rematkit/step_runner.hpp"
#include "rematkit/training_step.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// Two Dense layers: x is the data (argument 0); w1, b1, w2 are trained.
constexpr const char* kTwoLayers = R"({ lambda ; x:f32[4,6] w1:f32[6,5] b1:f32[5] w2:f32[5,3]. let
    a:f32[4,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
    c:f32[1,5] = reshape[new_sizes=(1, 5) dimensions=None] b1
    d:f32[4,5] = add a c
    e:f32[4,5] = tanh d
    f:f32[4,3] = dot_general[dimension_numbers=(([1], [0]), ([], []))] e w2
    l:f32[] = reduce_sum[axes=(0, 1)] f
  in (l,) })";

// One weight read by two products: its gradient is the sum of two, and the second product's
// transpose reads it in the backward pass.
constexpr const char* kSharedWeight = R"({ lambda ; x:f32[4,5] w:f32[5,5]. let
    a:f32[4,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    b:f32[4,5] = tanh a
    c:f32[4,5] = dot_general[dimension_numbers=(([1], [0]), ([], []))] b w
    l:f32[] = reduce_sum[axes=(0, 1)] c
  in (l,) })";

constexpr double kRate = 0.05;

BackendOptions on(std::vector<std::string> backends, BackendOptions::Fusion fusion = BackendOptions::Fusion::kAlways) {
  BackendOptions options{std::move(backends), &default_plugins()};
  options.fusion = fusion;
  options.fuse_updates = true;
  return options;
}

std::vector<size_t> sorted(std::vector<size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The step that writes argument a's buffer, its index, and its parts' primitives.
struct Writer {
  int index = -1;
  std::vector<std::string> prims;
};
Writer writer_of(const StepProgram& program, size_t a) {
  Writer w;
  const int buffer = program.argument_buffer(a);
  for (size_t s = 0; s < program.steps().size(); ++s) {
    const Step& step = program.steps()[s];
    if (step.kind != StepKind::kKernel || std::find(step.outputs.begin(), step.outputs.end(), buffer) == step.outputs.end())
      continue;
    w.index = static_cast<int>(s);
    for (int e : step.fused) w.prims.emplace_back(prim_name(program.linearization().graph.eqns[e].prim));
  }
  return w;
}

// The highest step other than `except` that reads argument a's buffer, or -1.
int last_reader(const StepProgram& program, size_t a, int except) {
  int last = -1;
  for (size_t s = 0; s < program.steps().size(); ++s) {
    const std::vector<int>& in = program.steps()[s].inputs;
    if (static_cast<int>(s) != except && std::find(in.begin(), in.end(), program.argument_buffer(a)) != in.end())
      last = static_cast<int>(s);
  }
  return last;
}

void expect_steps_equal(TrainingStep& fused, TrainingStep& unfused, const std::vector<size_t>& trained, int steps) {
  for (int step = 0; step < steps; ++step) {
    ASSERT_EQ(fused.run(), unfused.run()) << "loss of step " << step;
    for (size_t a : trained) {
      EXPECT_EQ(fused.argument(a).data, unfused.argument(a).data) << "argument " << a << " after step " << step;
      EXPECT_EQ(fused.gradient(a)->data, unfused.gradient(a)->data) << "gradient " << a << " of step " << step;
    }
  }
}

TEST(FusedSgd, EachWeightIsUpdatedInItsGradientsProductAfterItsLastReader) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(kTwoLayers, "two_layers");
  const RandomInputs in = random_inputs(program, 3, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  TrainingStep step(lin, on({"highway", "reference"}), {1, 2, 3}, kRate, in.arguments, in.constants);
  const StepProgram& steps = step.runner().program();
  // w1's and w2's gradients are products (x^T de, e^T df): their updates join them. b1's is a
  // reduce_sum over the batch, which fuses with nothing: update() takes it after the pass.
  EXPECT_EQ(sorted(steps.updated_arguments()), (std::vector<size_t>{1, 3}));
  for (size_t a : {size_t{1}, size_t{3}}) {
    const Writer w = writer_of(steps, a);
    ASSERT_GE(w.index, 0) << "argument " << a;
    ASSERT_GE(w.prims.size(), 3u);
    EXPECT_EQ(w.prims.front(), "dot_general");
    EXPECT_EQ(w.prims[w.prims.size() - 2], "mul");
    EXPECT_EQ(w.prims.back(), "sub");
    EXPECT_EQ(steps.steps()[static_cast<size_t>(w.index)].pass, Pass::kBackward);
    // w2 is read again by the backward pass (de = df w2^T): its update runs after that.
    EXPECT_LT(last_reader(steps, a, w.index), w.index) << "argument " << a;
  }
  EXPECT_GE(last_reader(steps, 3, writer_of(steps, 3).index), 0) << "nothing in the backward pass reads w2";
  EXPECT_EQ(writer_of(steps, 2).index, -1);  // b1 is written by update() alone
  const std::vector<Tensor> before = {step.argument(1), step.argument(2), step.argument(3)};
  step.run();
  EXPECT_EQ(step.measured_peak(), step.predicted_peak());
  // p - f32(lr * g), rounded to f32 after each operation, for the fused and the updated-after alike.
  const float lr = static_cast<float>(kRate);
  for (size_t a = 1; a <= 3; ++a) {
    const std::vector<double> g = step.gradient(a)->data;
    const std::vector<double> p = step.argument(a).data;
    for (size_t i = 0; i < p.size(); ++i) {
      const float scaled = lr * static_cast<float>(g[i]);
      ASSERT_EQ(p[i], static_cast<double>(static_cast<float>(before[a - 1].data[i]) - scaled)) << "argument " << a << "[" << i << "]";
    }
  }
}

TEST(FusedSgd, StepsAreTheUnfusedStepsBitForBitUnderEveryPolicy) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(kTwoLayers, "two_layers");
  const RandomInputs in = random_inputs(program, 5, -1.0, 1.0);
  for (const std::string policy : {"everything_saveable", "nothing_saveable", "dots_saveable"}) {
    SCOPED_TRACE(policy);
    const Linearization lin = linearize_with(program, policy);
    TrainingStep fused(lin, on({"highway", "reference"}), {1, 2, 3}, kRate, in.arguments, in.constants);
    TrainingStep unfused(lin, on({"highway", "reference"}, BackendOptions::Fusion::kOff), {1, 2, 3}, kRate, in.arguments,
                         in.constants);
    // nothing_saveable recomputes the layers in the backward pass, reading w1 and w2 once more:
    // the updates must wait for those reads too.
    EXPECT_EQ(sorted(fused.runner().program().updated_arguments()), (std::vector<size_t>{1, 3}));
    EXPECT_TRUE(unfused.runner().program().updated_arguments().empty());
    expect_steps_equal(fused, unfused, {1, 2, 3}, 3);
    EXPECT_EQ(fused.measured_peak(), fused.predicted_peak());
  }
}

TEST(FusedSgd, AWeightReadTwiceIsUpdatedWhereItsSummedGradientIsMade) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(kSharedWeight, "shared");
  const RandomInputs in = random_inputs(program, 8, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  TrainingStep fused(lin, on({"highway", "reference"}), {1}, kRate, in.arguments, in.constants);
  TrainingStep unfused(lin, on({"highway", "reference"}, BackendOptions::Fusion::kOff), {1}, kRate, in.arguments,
                       in.constants);
  const StepProgram& steps = fused.runner().program();
  ASSERT_EQ(steps.updated_arguments(), (std::vector<size_t>{1}));
  const Writer w = writer_of(steps, 1);
  ASSERT_GE(w.index, 0);
  // The gradient's last write is the add of the two products' parts; the update follows it, after
  // the transpose of the second product (which reads w) has run.
  EXPECT_NE(std::find(w.prims.begin(), w.prims.end(), "add"), w.prims.end());
  EXPECT_EQ(w.prims.back(), "sub");
  EXPECT_GE(last_reader(steps, 1, w.index), 0);
  EXPECT_LT(last_reader(steps, 1, w.index), w.index);
  expect_steps_equal(fused, unfused, {1}, 3);
}

TEST(FusedSgd, BackendsThatRunTheProductWithOneOutputLeaveTheUpdateAfterThePass) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  const Program program = parse_program(kTwoLayers, "two_layers");
  const RandomInputs in = random_inputs(program, 3, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  // oneDNN runs the products; its matmul writes one output, and a fused update has two (the
  // gradient, which TrainingStep::gradient reads, and the param): no update joins a product.
  TrainingStep step(lin, on({"onednn", "highway", "reference"}), {1, 2, 3}, kRate, in.arguments, in.constants);
  EXPECT_TRUE(step.runner().program().updated_arguments().empty());
  const Tensor w2 = step.argument(3);
  step.run();
  const float lr = static_cast<float>(kRate);
  const std::vector<double> g = step.gradient(3)->data, p = step.argument(3).data;
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(p[i], static_cast<double>(static_cast<float>(w2.data[i]) - lr * static_cast<float>(g[i])));
}

TEST(FusedSgd, OffByDefaultTheUpdateRunsAfterThePass) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(kTwoLayers, "two_layers");
  const RandomInputs in = random_inputs(program, 3, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  BackendOptions options{{"highway", "reference"}, &default_plugins()};
  TrainingStep step(lin, options, {1, 2, 3}, kRate, in.arguments, in.constants);
  EXPECT_TRUE(step.runner().program().updated_arguments().empty());
  TrainingStep fused(lin, on({"highway", "reference"}, BackendOptions::Fusion::kUnlessPeakRises), {1, 2, 3}, kRate,
                     in.arguments, in.constants);
  EXPECT_EQ(sorted(fused.runner().program().updated_arguments()), (std::vector<size_t>{1, 3}));
  expect_steps_equal(fused, step, {1, 2, 3}, 2);
}

TEST(FusedSgd, AGradientWithoutATrainingStepHasNoUpdates) {
  // One-shot gradients load their inputs: there is no resident param to write over.
  const Program program = parse_program(kTwoLayers, "two_layers");
  const Linearization lin = linearize_with(program);
  const StepProgram steps = build_step_program(lin, on({"highway", "reference"}), Passes::kForwardAndBackward,
                                               InputMode::kResident);
  EXPECT_TRUE(steps.updated_arguments().empty());  // the linearization asks for none
  EXPECT_TRUE(lin.updates.empty());
}

}  // namespace
}  // namespace rematkit::testing
