// bf16 training steps end to end (issue 46): the gpt, the llama and the CNN in bf16 on the default
// backend list run no kernel on the scalar reference backend, and their gradients on highway have
// the reference backend's bits, under every policy.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

constexpr const char* kPolicies[] = {"nothing_saveable", "everything_saveable"};

Model small_gpt(const std::string& policy) {
  GptConfig config;
  config.vocab = 64;
  config.sequence = 16;
  config.model = 32;
  config.mlp = 64;
  config.dtype = DType::kBF16;
  return build_gpt(config, policy);
}

Model small_llama(const std::string& policy) {
  LlamaConfig config;
  config.vocab = 64;
  config.sequence = 16;
  config.model = 32;
  config.mlp = 48;
  config.dtype = DType::kBF16;
  return build_llama(config, policy);
}

// At batch 1, as the sweep's llama: RMSNorm's gradient multiplies [1, S, 1] by [1, 1, D].
Model small_llama_of_one(const std::string& policy) {
  LlamaConfig config;
  config.vocab = 64;
  config.sequence = 16;
  config.model = 32;
  config.mlp = 48;
  config.batch = 1;
  config.dtype = DType::kBF16;
  return build_llama(config, policy);
}

// The sweep's cnn (sweep_models.cpp's cnn_instance) in bf16: two ResNet blocks, the second strided.
Model small_cnn(const std::string& policy) {
  ModelBuilder builder;
  builder.dtype(DType::kBF16);
  for (int64_t width : {4, 8}) builder.checkpoint(policy, [&](ModelBuilder& b) { b.resnet_block(width, width == 8 ? 2 : 1); });
  builder.global_average_pool().dense(3);
  return builder.build(Shape{2, 6, 6, 3}, 0, Loss::kSumOfSquares);
}

BackendOptions on(std::vector<std::string> backends) { return BackendOptions{std::move(backends), &default_plugins()}; }

// "bf16[2,16]".
std::string type_text(const Type& t) {
  std::string text = std::string(dtype_name(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) text += (i ? "," : "") + std::to_string(t.shape[i]);
  return text + "]";
}

// Each kernel step the default list places on the reference backend, as "primitive operand types
// -> result type" (a fused step's parts joined by +), with how many steps of that kind, over both
// passes.
std::map<std::string, int> reference_census(const Linearization& lin) {
  const StepProgram program = build_step_program(lin, on({"onednn", "highway", "reference"}), Pass::kBackward,
                                                 InputMode::kLoadedEachRun);
  std::map<std::string, int> census;
  const FlatGraph& g = lin.graph;
  for (const Step& step : program.steps()) {
    if (step.kind != StepKind::kKernel || step.kernel->backend() != "reference") continue;
    std::string what;
    const std::vector<int> eqns = step.fused.empty() ? std::vector<int>{step.equation} : step.fused;
    for (int e : eqns) {
      const auto& eqn = g.eqns[static_cast<size_t>(e)];
      if (!what.empty()) what += " + ";
      what += std::string(prim_name(eqn.prim));
      for (ValueId in : eqn.inputs) what += " " + type_text(g.values[in].type);
      what += " -> " + type_text(g.values[eqn.outputs[0]].type);
    }
    ++census[what];
  }
  return census;
}

std::string listed(const std::map<std::string, int>& census) {
  std::ostringstream out;
  for (const auto& [what, n] : census) out << "\n  " << n << " x " << what;
  return out.str();
}

// Every gradient's bits, in order (an absent gradient as one NaN word).
std::vector<uint64_t> gradient_bits(const GradientResult& r) {
  std::vector<uint64_t> bits;
  for (const std::optional<Tensor>& g : r.gradients) {
    if (!g) bits.push_back(~uint64_t{0});
    else
      for (double v : g->data) bits.push_back(std::bit_cast<uint64_t>(v));
  }
  return bits;
}

// Under each policy: highway's gradients have the reference backend's bits, and so does every
// policy; and no kernel step on the reference backend, under either.
void expect_bf16_step_on_fast_backends(Model (*build)(const std::string&)) {
  if (!backend_installed("highway") || !backend_installed("onednn")) GTEST_SKIP() << "highway or onednn is not built";
  std::vector<uint64_t> first_policy;
  std::map<std::string, int> census;
  for (const char* policy : kPolicies) {
    SCOPED_TRACE(policy);
    const Model model = build(policy);
    const Linearization lin = linearize_with(model.program);
    for (const auto& [what, n] : reference_census(lin)) census[std::string(policy) + ": " + what] += n;
    const std::vector<uint64_t> fast = gradient_bits(run_gradient(lin, {}, model.arguments, on({"highway", "reference"})));
    const std::vector<uint64_t> oracle = gradient_bits(run_gradient(lin, {}, model.arguments, on({"reference"})));
    EXPECT_TRUE(fast == oracle) << "highway's gradients differ from the reference backend's";
    if (first_policy.empty()) first_policy = oracle;
    else EXPECT_TRUE(oracle == first_policy) << "the gradients differ between policies";
  }
  EXPECT_TRUE(census.empty()) << "kernel steps on the reference backend:" << listed(census);
}

TEST(HalfPrecisionStep, TheBf16GptRunsNothingOnReferenceAndHasItsBits) { expect_bf16_step_on_fast_backends(small_gpt); }
TEST(HalfPrecisionStep, TheBf16LlamaRunsNothingOnReferenceAndHasItsBits) { expect_bf16_step_on_fast_backends(small_llama); }
TEST(HalfPrecisionStep, TheBf16LlamaOfBatchOneRunsNothingOnReferenceAndHasItsBits) {
  expect_bf16_step_on_fast_backends(small_llama_of_one);
}
TEST(HalfPrecisionStep, TheBf16CnnRunsNothingOnReferenceAndHasItsBits) { expect_bf16_step_on_fast_backends(small_cnn); }

}  // namespace
}  // namespace rematkit::testing
