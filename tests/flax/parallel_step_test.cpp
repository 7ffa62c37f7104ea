// A gpt and a llama written for a (data, fsdp, tensor) mesh (parallel_step.hpp): the step's gradients
// are the whole model's, on the interpreter's simulated mesh in f64 (1e-12) and on step programs per
// device in f32 (1e-5 of the largest); FSDP's gathers are named, so that a names policy keeps
// them and nothing_saveable gathers every layer's params again, and tensor parallelism's
// all-reduces are where Megatron puts them (the bytes of both worked out by hand); and what it
// cannot build is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/flax/parallel_step.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

GptConfig small_gpt() {
  GptConfig c;
  c.vocab = 32;
  c.sequence = 8;
  c.model = 16;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 64;
  c.batch = 4;
  return c;
}

LlamaConfig small_llama(int64_t heads, int64_t kv_heads) {
  LlamaConfig c;
  c.vocab = 32;
  c.sequence = 8;
  c.model = 16;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.mlp = 24;
  c.layers = 2;
  c.batch = 4;
  return c;
}

Program gpt_on_mesh(const GptConfig& c, const ParallelConfig& p, const std::string& policy) {
  GptConfig one = c;
  one.batch = c.batch / p.batch_shards();
  one.tensor = p.tensor;
  const Model share = build_gpt(one, policy, 0, ModelValues::kNone);
  return parallel_step(share.program, build_gpt(c, policy, 0, ModelValues::kNone).program, p, "gpt", share.tensor_splits);
}

double largest(const Tensor& t) {
  double m = 0;
  for (double v : t.data) m = std::max(m, std::abs(v));
  return m;
}

void expect_gradients_near(const GradientResult& got, const GradientResult& want, double relative, const std::string& what) {
  ASSERT_EQ(got.gradients.size(), want.gradients.size());
  EXPECT_NEAR(got.outputs[0].data[0], want.outputs[0].data[0], relative * std::max(1.0, std::abs(want.outputs[0].data[0])));
  for (size_t a = 0; a < want.gradients.size(); ++a) {
    ASSERT_EQ(got.gradients[a].has_value(), want.gradients[a].has_value()) << what << " argument " << a;
    if (!want.gradients[a]) continue;
    const double scale = std::max(1e-3, largest(*want.gradients[a]));
    for (size_t i = 0; i < want.gradients[a]->data.size(); ++i)
      ASSERT_NEAR(got.gradients[a]->data[i], want.gradients[a]->data[i], relative * scale)
          << what << " argument " << a << " element " << i;
  }
}

struct MeshCase {
  const char* name;
  ParallelConfig parallel;
};

class GptOnMeshTest : public ::testing::TestWithParam<MeshCase> {};

TEST_P(GptOnMeshTest, GradientsAreTheWholeModels) {
  const MeshCase& c = GetParam();
  const GptConfig config = small_gpt();
  const Model whole = build_gpt(config, "nothing_saveable", 3);
  const Program sharded = gpt_on_mesh(config, c.parallel, "nothing_saveable");
  const std::vector<Tensor> args = step_arguments(whole.arguments, sharded);
  const GradientResult want = interpret_gradient(linearize_with(whole.program), {}, whole.arguments, Arithmetic::kFloat64);
  const GradientResult simulated = interpret_gradient(linearize_with(sharded), {}, args, Arithmetic::kFloat64);
  expect_gradients_near(simulated, want, 1e-12, "the interpreter's simulated mesh");

  Linearization lin = linearize_with(sharded);
  place_on_mesh(lin, *lin.graph.mesh);
  const MeshRun run = run_on_simulated_devices(lin, *lin.graph.mesh, BackendOptions{default_plugins().fastest_backends(), &default_plugins()},
                                               {}, args);
  expect_gradients_near(run.result, want, 1e-5, "step programs per device");
  for (int64_t peak : run.measured_peaks) EXPECT_EQ(peak, run.predicted_peak);
}

INSTANTIATE_TEST_SUITE_P(Meshes, GptOnMeshTest,
                         ::testing::Values(MeshCase{"data_parallel", {4, 1}}, MeshCase{"fsdp", {1, 4}},
                                           MeshCase{"data_and_fsdp", {2, 2}}, MeshCase{"tensor", {1, 1, 2}},
                                           MeshCase{"fsdp_and_tensor", {1, 2, 2}}),
                         [](const auto& info) { return std::string(info.param.name); });

// Each layer's 12 params are 3,280 floats (13,120 bytes), all split over fsdp=4 along a first dim
// of 16, 48 or 64; gathering one sends the other 3 blocks' worth, 3/4 of it: 9,840 bytes a layer.
// nothing_saveable gathers again, in the backward pass, every param the recomputation needs: all
// but the MLP's output bias (16 floats, 48 bytes sent), which only the block's output adds, and
// that is the next checkpoint's saved input. (9,840 - 48) x 2 layers = 19,584. A policy that
// saves the gathered weights by name gathers nothing again.
TEST(GptOnMesh, FsdpReGathersWhatThePolicyDoesNotKeepByName) {
  std::string names;
  for (int l = 0; l < 2; ++l)
    for (const char* p : {"ln_1_scale", "ln_1_bias", "attn_c_attn_kernel", "attn_c_attn_bias", "attn_c_proj_kernel",
                          "attn_c_proj_bias", "ln_2_scale", "ln_2_bias", "mlp_c_fc_kernel", "mlp_c_fc_bias",
                          "mlp_c_proj_kernel", "mlp_c_proj_bias"})
      names += std::string(names.empty() ? "" : ", ") + "'gathered_h_" + std::to_string(l) + "_" + p + "'";
  auto communication = [&](const std::string& policy) {
    Linearization lin = linearize_with(gpt_on_mesh(small_gpt(), {1, 4}, policy));
    place_on_mesh(lin, *lin.graph.mesh);
    return gradient_communication(lin, *lin.graph.mesh);
  };
  const GradientCommunication nothing = communication("nothing_saveable");
  const GradientCommunication kept = communication("save_only_these_names(" + names + ")");
  EXPECT_EQ(nothing.recompute, 19584);
  EXPECT_EQ(kept.recompute, 0);
  EXPECT_EQ(nothing.forward, kept.forward);
  EXPECT_EQ(nothing.backward, kept.backward);
}

// Megatron's tensor parallelism over 2 devices: each layer's attention and MLP end in a psum over
// 'tensor' of the residual branch, f32[4, 8, 16] (2,048 bytes); a psum over 2 devices sends half
// of it twice (reduce-scatter, all-gather): 2,048 bytes each. Forward: 2 a layer, 8,192. Backward:
// their transposes, psums too, 8,192; and the cotangents of the params every device holds whole
// (shard_map's transpose psums them over the axes their names leave out, 'tensor'): wte 2,048,
// wpe 512, 6 x 64 a layer (the LayerNorms' scales and biases, the two row-parallel biases), ln_f
// 128: 3,456. Recomputation under nothing_saveable and dots_saveable alike sums the attention's
// branch again (the MLP's input needs it, and a psum is no dot); the MLP's psum it need not redo:
// only the block's output reads it, and that is the next checkpoint's input. 2,048 a layer. A
// policy that keeps the attention's sum by name (attention_summed) sends nothing again.
TEST(GptOnMesh, TensorParallelAllReducesAndWhatRecomputationSendsAgain) {
  auto communication = [&](const std::string& policy) {
    Linearization lin = linearize_with(gpt_on_mesh(small_gpt(), {1, 1, 2}, policy));
    place_on_mesh(lin, *lin.graph.mesh);
    return gradient_communication(lin, *lin.graph.mesh);
  };
  for (const char* policy : {"nothing_saveable", "dots_saveable"}) {
    const GradientCommunication c = communication(policy);
    EXPECT_EQ(c.forward, 8192) << policy;
    EXPECT_EQ(c.recompute, 4096) << policy;
    EXPECT_EQ(c.backward, 8192 + 3456) << policy;
  }
  EXPECT_EQ(communication("everything_saveable").recompute, 0);
  EXPECT_EQ(communication("save_only_these_names('attention_summed')").recompute, 0);
}

// The fused q, k, v kernel's columns are q's, k's and v's in turn: each device's share takes its
// heads' columns of each (not a block of 3D / T columns), so the step takes it as [D, 3, D] and
// splits the last dim; and the gradients above are the whole model's only if it does.
TEST(GptOnMesh, TensorParallelSplitsEachOfQKAndV) {
  const std::string text = print_program(gpt_on_mesh(small_gpt(), {1, 1, 2}, "nothing_saveable"));
  EXPECT_NE(text.find(" h_0_attn_c_attn_kernel:f32[16,3,16] "), std::string::npos) << text.substr(0, 600);
  EXPECT_NE(text.find(" h_0_attn_c_attn_bias:f32[3,16] "), std::string::npos);
  EXPECT_NE(text.find("{2: ('tensor',)}, {1: ('tensor',)}, {0: ('tensor',)}, {}"), std::string::npos);
  EXPECT_NE(text.find("mesh=Mesh('data': 1, 'fsdp': 1, 'tensor': 2)"), std::string::npos);
}

TEST(LlamaOnMesh, TensorParallelGradientsAreTheWholeModels) {
  const LlamaConfig c = small_llama(4, 2);
  for (const ParallelConfig p : {ParallelConfig{1, 1, 2}, ParallelConfig{1, 2, 2}}) {
    LlamaConfig one = c;
    one.batch = c.batch / p.batch_shards();
    one.tensor = p.tensor;
    const Model whole = build_llama(c, "dots_saveable", 5);
    const Model share = build_llama(one, "dots_saveable", 5, ModelValues::kNone);
    const Program sharded = parallel_step(share.program, whole.program, p, "llama", share.tensor_splits);
    const GradientResult want = interpret_gradient(linearize_with(whole.program), {}, whole.arguments, Arithmetic::kFloat64);
    const GradientResult got =
        interpret_gradient(linearize_with(sharded), {}, step_arguments(whole.arguments, sharded), Arithmetic::kFloat64);
    expect_gradients_near(got, want, 1e-12, "llama on fsdp=" + std::to_string(p.fsdp) + " tensor=2");
  }
}

// Tensor parallelism over scanned layers (nn.scan): each stacked param splits behind its stacking
// dim, the fused kernel [L, D, 3D] as [L, D, 3, D]; the psums run inside the scan's body.
TEST(GptOnMesh, TensorParallelScannedLayersAreTheWholeModels) {
  GptConfig c = small_gpt();
  c.scan_lengths = {2};
  const Model whole = build_gpt(c, "nothing_saveable", 3);
  const Program sharded = gpt_on_mesh(c, {1, 1, 2}, "nothing_saveable");
  EXPECT_NE(print_program(sharded).find(" h_0_attn_c_attn_kernel:f32[2,16,3,16] "), std::string::npos);
  const GradientResult want = interpret_gradient(linearize_with(whole.program), {}, whole.arguments, Arithmetic::kFloat64);
  const GradientResult got =
      interpret_gradient(linearize_with(sharded), {}, step_arguments(whole.arguments, sharded), Arithmetic::kFloat64);
  expect_gradients_near(got, want, 1e-12, "scanned gpt on tensor=2");
}

TEST(GptOnMesh, TensorMustDivideTheHeads) {
  GptConfig c = small_gpt();
  c.tensor = 4;  // 2 heads
  try {
    build_gpt(c, "nothing_saveable", 0, ModelValues::kNone);
    FAIL() << "built a share of 2 heads over 4 devices";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "gpt: tensor (4) must divide heads (2) and mlp (64)");
  }
}

TEST(LlamaOnMesh, GradientsAreTheWholeModels) {
  const LlamaConfig c = small_llama(2, 1);
  LlamaConfig one = c;
  one.batch = 2;
  const Model whole = build_llama(c, "dots_saveable", 5);
  const Program sharded =
      parallel_step(build_llama(one, "dots_saveable", 5, ModelValues::kNone).program, whole.program, {1, 2}, "llama");
  const GradientResult want = interpret_gradient(linearize_with(whole.program), {}, whole.arguments, Arithmetic::kFloat64);
  const GradientResult got = interpret_gradient(linearize_with(sharded), {}, whole.arguments, Arithmetic::kFloat64);
  expect_gradients_near(got, want, 1e-12, "llama on fsdp=2");
}

TEST(GptOnMesh, ScannedLayersUnderFsdpAreRefused) {
  GptConfig c = small_gpt();
  c.scan_lengths = {2};
  try {
    gpt_on_mesh(c, {1, 2}, "nothing_saveable");
    FAIL() << "built FSDP over scanned layers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt: parallel: {fsdp} needs the layers unrolled (loop: none)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rematkit::testing
