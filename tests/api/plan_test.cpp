// The public API (rematkit/rematkit.hpp, and ModelBuilder from rematkit::flax): a model built in
// C++, planned, differentiated and trained, checked against gradients worked out by hand, and its
// errors.
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/rematkit.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <fstream>
#include <sstream>
#include <variant>
#include <string>
#include <cstdlib>

namespace rematkit::testing {
namespace {

TEST(ModelBuilder, DenseModelsHaveFlaxParamsInFlattenOrder) {
  const Model model = ModelBuilder().dense(5).relu().dense(3).build(4, 6, 1);
  // x, then params sorted by path: Dense_0/bias, Dense_0/kernel, Dense_1/bias, Dense_1/kernel.
  ASSERT_EQ(model.arguments.size(), 5u);
  EXPECT_EQ(model.params, (std::vector<size_t>{1, 2, 3, 4}));
  EXPECT_EQ(model.arguments[0].type.shape, (Shape{4, 6}));
  EXPECT_EQ(model.arguments[1].type.shape, (Shape{5}));
  EXPECT_EQ(model.arguments[2].type.shape, (Shape{6, 5}));
  EXPECT_EQ(model.arguments[3].type.shape, (Shape{3}));
  EXPECT_EQ(model.arguments[4].type.shape, (Shape{5, 3}));
  for (double b : model.arguments[1].data) EXPECT_EQ(b, 0.0);  // Flax's bias init: zeros
  EXPECT_THROW(ModelBuilder().build(4, 6), Error);
  EXPECT_THROW(ModelBuilder().dense(0), Error);
  EXPECT_THROW(ModelBuilder().checkpoint("nothing_saveable", [](ModelBuilder&) {}), Error);
}

TEST(ModelBuilder, NamedLayersAreWhatNamePoliciesSave) {
  // dense(8) named 'h', then tanh, inside a checkpoint: save_only_these_names('h') keeps the named
  // f32[3,8] (tanh's JVP recomputes from it); 'other' keeps only the checkpoint's inputs.
  auto residuals = [](const std::string& policy) {
    ModelBuilder builder;
    builder.checkpoint(policy, [](ModelBuilder& m) { m.dense(8).name("h").tanh(); }).dense(2);
    const Model model = builder.build(3, 4);
    return Plan(model.program).residual_report();
  };
  const std::string named = residuals("save_only_these_names('h')");
  EXPECT_NE(named.find("f32[3,8] named 'h'"), std::string::npos) << named;
  const std::string other = residuals("save_only_these_names('other')");
  EXPECT_EQ(other.find("named 'h'"), std::string::npos) << other;
  EXPECT_THROW(ModelBuilder().name("h"), Error);  // nothing to name
  EXPECT_THROW(ModelBuilder().dense(2).name(""), Error);
}

TEST(ModelBuilder, LayerNormGeluAndSiluComputeTheirFormulas) {
  // One row x = (1, 2, 3, 6): mean 3, E[x^2] = 12.5, var 3.5; LayerNorm (scale 1, bias 0) gives
  // (x - 3) / sqrt(3.5 + 1e-6); then gelu (exact), and a second model applies silu.
  const Model norm = ModelBuilder().layer_norm().gelu(false).build(1, 4, 0, Loss::kSum);
  ASSERT_EQ(norm.arguments.size(), 3u);  // x, then LayerNorm_0's bias and scale
  Tensor x = norm.arguments[0];
  x.data = {1, 2, 3, 6};
  std::vector<Tensor> args = norm.arguments;
  args[0] = x;
  const std::vector<Tensor> out = evaluate_program(norm.program, {}, args, Arithmetic::kFloat64);
  // The program's constants are f32 literals: epsilon and sqrt(1/2) as f32 rounds them.
  const double epsilon = static_cast<float>(1e-6), sqrt_half = static_cast<float>(std::sqrt(0.5));
  double expected = 0;
  for (double v : x.data) {
    const double n = (v - 3) / std::sqrt(3.5 + epsilon);
    expected += 0.5 * n * std::erfc(-n * sqrt_half);
  }
  EXPECT_NEAR(out[0].data[0], expected, 1e-12);
  const Model swish = ModelBuilder().silu().dense(1).build(2, 3, 0, Loss::kSum);
  const Model tanh_gelu = ModelBuilder().gelu().dense(1).build(2, 3, 0, Loss::kSum);
  for (const Model* m : {&swish, &tanh_gelu}) {
    // Each differentiates: the gradient of sum(Dense(act(x))) exists for every param.
    const GradientResult g = Plan(m->program).gradient(m->arguments);
    for (size_t p : m->params) EXPECT_TRUE(g.gradients[p].has_value());
  }
}

// A small GPT-like stack from the builder: embedding, then a checkpointed block of LayerNorm,
// causal attention with dropout on its weights, dropout, and a tanh-gelu Dense.
Model attention_model(const std::string& policy) {
  ModelBuilder builder;
  builder.embedding(13, 8).checkpoint(policy, [](ModelBuilder& b) {
    b.layer_norm().attention(2, 0.25).dropout(0.25).dense(8).gelu();
  });
  return builder.build(Shape{2, 5}, 3, Loss::kSum);
}

TEST(ModelBuilder, EmbeddingAttentionAndDropoutTakeIdsAndAKey) {
  const Model model = attention_model("nothing_saveable");
  EXPECT_EQ(model.arguments.front().type, (Type{DType::kI32, {2, 5}, MemorySpace::kDevice}));
  EXPECT_EQ(model.arguments.back().type.dtype, DType::kKeyFry);  // the dropout key, after the params
  for (double id : model.arguments.front().data) EXPECT_TRUE(id >= 0 && id < 13);
  // Embed_0's table, LayerNorm_0's scale and bias, the kernels and biases of the attention's two
  // Dense layers and of Dense_0: nine params.
  EXPECT_EQ(model.params.size(), 9u);
  // Dropout masks are drawn again from the key when recomputed: the same gradients under every policy.
  std::optional<GradientResult> first;
  for (const char* policy : {"everything_saveable", "nothing_saveable", "dots_saveable"}) {
    const Model m = attention_model(policy);
    const GradientResult g = Plan(m.program).gradient(m.arguments);
    if (!first) {
      first = g;
      continue;
    }
    for (size_t p : m.params) EXPECT_EQ(g.gradients[p]->data, first->gradients[p]->data) << policy << " argument " << p;
  }
  EXPECT_THROW(ModelBuilder().dense(2).embedding(3, 4), Error);  // an embedding comes first
  EXPECT_THROW(ModelBuilder().dense(4).attention(3).build(2, 4), Error);  // not [batch, sequence, features]
  EXPECT_THROW(ModelBuilder().dropout(1.0), Error);
}

TEST(Plan, OneDenseLayersGradientIsTheHandGradient) {
  // y = x W + b. For loss sum(y): dW[i][j] = sum_r x[r][i], db[j] = batch. For loss sum(y^2):
  // dW[i][j] = sum_r 2 x[r][i] y[r][j], db[j] = sum_r 2 y[r][j].
  for (Loss loss : {Loss::kSum, Loss::kSumOfSquares}) {
    const Model model = ModelBuilder().dense(3).build(4, 2, 7, loss);
    Plan plan(model.program);
    const GradientResult r = plan.gradient(model.arguments);
    const std::vector<double>&x = model.arguments[0].data, &b = model.arguments[1].data, &w = model.arguments[2].data;
    std::vector<double> db(3, 0.0), dw(6, 0.0);
    double value = 0;
    for (int r0 = 0; r0 < 4; ++r0) {
      for (int j = 0; j < 3; ++j) {
        double y = b[j];
        for (int i = 0; i < 2; ++i) y += x[r0 * 2 + i] * w[i * 3 + j];
        const double dy = loss == Loss::kSum ? 1.0 : 2.0 * y;
        value += loss == Loss::kSum ? y : y * y;
        db[j] += dy;
        for (int i = 0; i < 2; ++i) dw[i * 3 + j] += x[r0 * 2 + i] * dy;
      }
    }
    EXPECT_NEAR(r.outputs[0].data[0], value, 1e-5 * std::max(1.0, std::fabs(value)));
    ASSERT_TRUE(r.gradients[1] && r.gradients[2]);
    for (size_t j = 0; j < 3; ++j) EXPECT_NEAR(r.gradients[1]->data[j], db[j], 1e-5);
    for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(r.gradients[2]->data[k], dw[k], 1e-5);
    EXPECT_EQ(plan.measured_peak(), plan.predicted_peak());
  }
}

TEST(Plan, PoliciesChangeTheResidualsNotTheGradient) {
  ModelBuilder builder;
  builder.checkpoint("everything_saveable", [](ModelBuilder& m) { m.dense(8).tanh(); }).dense(2);
  const Model model = builder.build(3, 4);
  PlanOptions remat;
  remat.policy = "nothing_saveable";
  Plan saving(model.program), recomputing(model.program, remat);
  EXPECT_LT(recomputing.residual_bytes(), saving.residual_bytes());
  EXPECT_NE(recomputing.residual_report(), saving.residual_report());
  const GradientResult a = saving.gradient(model.arguments), b = recomputing.gradient(model.arguments);
  for (size_t i = 1; i < a.gradients.size(); ++i) EXPECT_EQ(a.gradients[i]->data, b.gradients[i]->data);
  EXPECT_EQ(saving.forward(model.arguments)[0].data, a.outputs[0].data);
}

TEST(Plan, TrainingStepsApplyTheGradient) {
  const Model model = ModelBuilder().dense(4).relu().dense(1).build(8, 3, 2);
  PlanOptions options;
  options.differentiate = model.params;
  Plan plan(model.program, options);
  const GradientResult expected = plan.gradient(model.arguments);
  TrainingStep step = plan.training_step(model.arguments, model.params, 0.05);
  EXPECT_NEAR(step.run(), expected.outputs[0].data[0], 1e-5);
  for (size_t p : model.params)
    for (size_t i = 0; i < model.arguments[p].data.size(); ++i)
      EXPECT_NEAR(step.argument(p).data[i], model.arguments[p].data[i] - 0.05 * expected.gradients[p]->data[i], 1e-6);
  EXPECT_THROW(step.argument(99), Error);
  EXPECT_THROW(step.gradient(99), Error);
  const float second = step.run();
  EXPECT_LT(second, expected.outputs[0].data[0]);  // a small step down a smooth loss descends
}

// How a plan runs is one BackendOptions: its fusion too. A Dense layer with its relu fuses on
// highway (the values between the parts get no buffer); with fusion off the plan is the unfused one.
// "BACKEND.NAME=VALUE": an integer value where it reads as one, else a string; anything else is
// bad input that says how to write it.
TEST(BackendOptions, ABackendOptionIsReadFromItsText) {
  const BackendOptions::BackendOption layout = parse_backend_option("onednn.weights_layout=as_it_lies");
  EXPECT_EQ(layout.backend, "onednn");
  EXPECT_EQ(layout.name, "weights_layout");
  EXPECT_EQ(std::get<std::string>(layout.value), "as_it_lies");
  EXPECT_EQ(std::get<int64_t>(parse_backend_option("onednn.widened_block_bytes=-3").value), -3);
  EXPECT_EQ(std::get<std::string>(parse_backend_option("onednn.x=2a").value), "2a");
  EXPECT_EQ(std::get<std::string>(parse_backend_option("onednn.x=").value), "");
  for (const char* bad : {"weights_layout=as_it_lies", ".x=1", "onednn.=1", "onednn.x"}) {
    try {
      parse_backend_option(bad);
      ADD_FAILURE() << bad << " was read";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "backend option '" + std::string(bad) +
                                           "': write it as BACKEND.NAME=VALUE, e.g. onednn.weights_layout=as_it_lies");
    }
  }
}

// A backend option reaches the backend it names: oneDNN's weights_layout changes where its
// products' weights are read from (on AVX-512, copies in the steps' workspaces), not the gradient; a bad value is the plugin's error, and an option for a backend not in the list
// is refused.
TEST(BackendOptions, AnOptionReachesTheBackendItNames) {
  if (!backend_installed("onednn")) GTEST_SKIP() << "onednn is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[768,96] w:f32[96,200]. let
    y:f32[768,200] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w
    l:f32[] = reduce_sum[axes=(0, 1)] y
  in (l,) })", "product");
  const RandomInputs in = random_inputs(program, 768, -1.0, 1.0);
  auto options = [](std::vector<std::string> backend_options) {
    PlanOptions o;
    o.backends.preference = {"onednn", "reference"};
    for (const std::string& text : backend_options) o.backends.backend_options.push_back(parse_backend_option(text));
    return o;
  };
  Plan preferred(program, options({})), as_it_lies(program, options({"onednn.weights_layout=as_it_lies"}));
  const GradientResult a = preferred.gradient(in.arguments), b = as_it_lies.gradient(in.arguments);
  for (size_t i = 0; i < a.gradients.size(); ++i)
    for (size_t j = 0; j < a.gradients[i]->data.size(); ++j)
      EXPECT_NEAR(a.gradients[i]->data[j], b.gradients[i]->data[j], 1e-3) << i << " " << j;
  auto workspace_bytes = [](const Plan& plan) {
    int64_t bytes = 0;
    for (const BufferMemory& b : plan.memory_report().buffers)
      if (b.kind == BufferKind::kKernelWorkspace) bytes += b.bytes;
    return bytes;
  };
  if (__builtin_cpu_supports("avx512f") && !std::getenv("ONEDNN_MAX_CPU_ISA")) {
    EXPECT_GE(workspace_bytes(preferred), workspace_bytes(as_it_lies) + 96 * 200 * 4);
  }
  EXPECT_THROW(
      {
        try {
          Plan bad(program, options({"onednn.weights_layout=sideways"}));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("weights_layout='preferred' or 'as_it_lies'"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  try {
    Plan elsewhere(program, options({"highway.x=1"}));
    ADD_FAILURE() << "an option for a backend not in the list was taken";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "backend option highway.x is for a backend not in the list (onednn, reference)");
  }
}

TEST(Plan, FusionCanBeTurnedOff) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Model model = ModelBuilder().dense(16).relu().dense(16).relu().dense(1).build(8, 16);
  PlanOptions fused, unfused;
  fused.backends.preference = unfused.backends.preference = {"highway", "reference"};
  unfused.backends.fusion = BackendOptions::Fusion::kOff;
  const Plan a(model.program, fused), b(model.program, unfused);
  BackendOptions off{{"highway", "reference"}, &default_plugins()};
  off.fusion = BackendOptions::Fusion::kOff;
  const StepProgram expected = build_step_program(b.linearization(), off, Pass::kBackward, InputMode::kLoadedEachRun);
  EXPECT_EQ(b.predicted_peak(), expected.layout().arena(MemorySpace::kDevice));
  EXPECT_EQ(expected.fused_steps(), 0u);
  EXPECT_NE(a.memory_report().steps.size(), b.memory_report().steps.size()) << "the fused plan runs fewer steps";
}

TEST(Plan, PlansAndStepsMove) {
  const Model model = ModelBuilder().dense(3).relu().dense(1).build(4, 2);
  std::vector<Plan> plans;
  plans.push_back(Plan(model.program));
  std::vector<TrainingStep> steps;
  steps.push_back(plans[0].training_step(model.arguments, model.params, 0.01));
  plans.push_back(Plan(model.program));  // the vector grows: the first plan moves
  const GradientResult expected = plans[1].gradient(model.arguments);
  EXPECT_NEAR(steps[0].run(), expected.outputs[0].data[0], 1e-5);
  EXPECT_EQ(plans[0].gradient(model.arguments).gradients[2]->data, expected.gradients[2]->data);
}

TEST(Plan, BadInputIsOneError) {
  const Model model = ModelBuilder().dense(2).build(2, 2);
  PlanOptions unknown_policy, unknown_backend;
  unknown_policy.policy = "no_such_policy";
  unknown_backend.backends.preference = {"no_such_backend"};
  EXPECT_THROW(Plan(model.program, unknown_policy), Error);
  EXPECT_THROW(Plan(model.program, unknown_backend), Error);
  Plan plan(model.program);
  try {
    plan.gradient({model.arguments[0]});
    FAIL() << "a missing argument was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the program takes 3 arguments, not 1");
  }
  std::vector<Tensor> wrong = model.arguments;
  wrong[0] = Tensor::filled(Type{DType::kF32, {3, 2}}, 0.0);
  try {
    plan.forward(wrong);
    FAIL() << "a wrong shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0 ('x') is f32[3,2] where the program has f32[2,2]"), std::string::npos)
        << e.what();
  }
}

TEST(Readme, UseFromCppShowsTheQuickStartExampleVerbatim) {
  // The README's snippet must compile: it is the example the package test builds and runs.
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::string readme = read(std::string(REMATKIT_EXAMPLES_DIR) + "/../README.md");
  const std::string example = read(std::string(REMATKIT_EXAMPLES_DIR) + "/quick_start.cpp");
  ASSERT_FALSE(example.empty());
  const size_t section = readme.find("## Use from C++");
  ASSERT_NE(section, std::string::npos);
  const size_t start = readme.find("```cpp\n", section);
  ASSERT_NE(start, std::string::npos);
  const size_t end = readme.find("```\n", start + 7);
  EXPECT_EQ(readme.substr(start + 7, end - start - 7), example);
}

}  // namespace
}  // namespace rematkit::testing
