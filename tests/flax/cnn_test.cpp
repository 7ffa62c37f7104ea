// ModelBuilder's CNN: ResNet blocks in NHWC as Flax traces them (nn.Conv's SAME padding as the
// pairs JAX prints, HWIO kernels drawn by lecun_normal from each Conv's scope), global average
// pooling and a Dense head; its gradient against finite differences in the exact-f64 interpreter,
// and the same gradient, bit for bit, under every policy and wherever the checkpoints go.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <optional>

#include "rematkit/flax/initializers.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/flax/scope.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/ir/printer.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// Two blocks on 6x6 images with 2 channels: width 3 (a 1x1 projection: the width changes), then
// width 4 at stride 2 (its first conv and the projection strided); the mean, Dense(5).
// `remat`: a checkpoint with `policy` around each block.
Model tiny_cnn(const std::string& policy, bool remat = true, uint64_t seed = 0, DType dtype = DType::kF32) {
  ModelBuilder model;
  model.dtype(dtype);
  auto block = [&](int64_t width, int64_t stride) {
    if (remat) model.checkpoint(policy, [&](ModelBuilder& b) { b.resnet_block(width, stride); });
    else model.resnet_block(width, stride);
  };
  block(3, 1);
  block(4, 2);
  model.global_average_pool().dense(5);
  return model.build(Shape{2, 6, 6, 2}, seed);
}

std::vector<const Equation*> convolutions(const Program& p, std::vector<const Equation*> seen = {}) {
  for (const Equation& e : p.eqns) {
    if (e.prim == Prim::kConvGeneralDilated) seen.push_back(&e);
    if (const Program* body = e.body()) seen = convolutions(*body, seen);
  }
  return seen;
}

TEST(Cnn, ConvolutionsAreFlaxsNhwcWithTheSamePaddingJaxPrints) {
  const Model m = tiny_cnn("nothing_saveable");
  const std::vector<const Equation*> convs = convolutions(m.program);
  ASSERT_EQ(convs.size(), 6u);
  // padtype_to_pads('SAME'): 3x3 at stride 1 pads (1, 1); at stride 2 on 6, 3 outputs need
  // 2*2 + 3 - 6 = 1, at the end; 1x1 needs none.
  auto expected = [](int64_t stride, PadPair pad) {
    ConvParams c;
    c.dims = ConvDims{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}};
    c.window_strides = {stride, stride};
    c.padding = {pad, pad};
    c.lhs_dilation = c.rhs_dilation = {1, 1};
    return conv_general_dilated_params(c);
  };
  EXPECT_EQ(convs[0]->params, expected(1, {1, 1}));  // block 0: Conv_0, Conv_1, the projection
  EXPECT_EQ(convs[1]->params, expected(1, {1, 1}));
  EXPECT_EQ(convs[2]->params, expected(1, {0, 0}));
  EXPECT_EQ(convs[3]->params, expected(2, {0, 1}));  // block 1, strided
  EXPECT_EQ(convs[4]->params, expected(1, {1, 1}));
  EXPECT_EQ(convs[5]->params, expected(2, {0, 0}));
  EXPECT_NE(print_program(m.program).find("padding=((0, 1), (0, 1))"), std::string::npos);
}

TEST(Cnn, ParamsAreFlaxsTreeDrawnFromEachConvsScope) {
  const Model m = tiny_cnn("nothing_saveable", true, 3);
  // x, then the params in JAX's flatten order (sorted paths).
  std::vector<std::string> names;
  for (int v : m.program.invars) names.push_back(m.program.vars[static_cast<size_t>(v)].name);
  std::vector<std::string> want = {"x", "params_Dense_0_bias", "params_Dense_0_kernel"};
  for (const char* block : {"ResNetBlock_0", "ResNetBlock_1"})
    for (const char* conv : {"Conv_0", "Conv_1", "Conv_2"})
      for (const char* leaf : {"bias", "kernel"}) want.push_back(std::string("params_") + block + "_" + conv + "_" + leaf);
  EXPECT_EQ(names, want);
  ASSERT_EQ(m.params.size(), 14u);
  EXPECT_EQ(m.arguments[4].type.shape, (Shape{3, 3, 2, 3}));  // ResNetBlock_0/Conv_0/kernel: HWIO
  EXPECT_EQ(m.arguments[8].type.shape, (Shape{1, 1, 2, 3}));  // its projection
  EXPECT_EQ(m.arguments[10].type.shape, (Shape{3, 3, 3, 4}));
  // nn.Conv's kernel_init, lecun_normal (fan_in = 3*3*2), with the key make_rng('params') gives
  // ResNetBlock_0/Conv_0's scope; the bias zeros.
  flax::Scope root(random::prng_key(3), flax::RngOptions{});
  const random::Key key = root.push_autonamed("ResNetBlock").push_autonamed("Conv").make_rng();
  const std::vector<float> kernel = flax::lecun_normal()(key, {3, 3, 2, 3}, random::PrngMode::kPartitionable);
  ASSERT_EQ(m.arguments[4].data.size(), kernel.size());
  for (size_t i = 0; i < kernel.size(); ++i) EXPECT_EQ(m.arguments[4].data[i], kernel[i]) << i;
  for (double b : m.arguments[3].data) EXPECT_EQ(b, 0.0);
}

TEST(Cnn, GradientMatchesFiniteDifferences) {
  const Model m = tiny_cnn("nothing_saveable", true, 5);
  const GradientResult ad = interpret_gradient(linearize_with(m.program), {}, m.arguments, Arithmetic::kFloat64);
  const std::vector<Tensor> fd = finite_difference_gradients(m.program, RandomInputs{{}, m.arguments}, 1e-6);
  for (size_t p : m.params) {
    ASSERT_TRUE(ad.gradients[p].has_value());
    for (size_t i = 0; i < fd[p].data.size(); ++i)
      EXPECT_NEAR(ad.gradients[p]->data[i], fd[p].data[i], 1e-6 + 1e-5 * std::fabs(fd[p].data[i]))
          << "argument " << p << " element " << i;
  }
}

TEST(Cnn, GradientsAreBitIdenticalUnderEveryPolicyAndWithoutCheckpoints) {
  const Model plain = tiny_cnn("", /*remat=*/false);
  const GradientResult expected = interpret_gradient(linearize_with(plain.program), {}, plain.arguments, Arithmetic::kFloat32);
  for (const char* policy : {"everything_saveable", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable",
                             "save_if_bytes_at_least(everything_saveable, 256)"}) {
    SCOPED_TRACE(policy);
    const Model m = tiny_cnn(policy);
    const GradientResult g = interpret_gradient(linearize_with(m.program), {}, m.arguments, Arithmetic::kFloat32);
    EXPECT_EQ(g.outputs[0].data, expected.outputs[0].data);
    for (size_t p : m.params) EXPECT_EQ(g.gradients[p]->data, expected.gradients[p]->data) << "argument " << p;
  }
}

// Flax's dtype=param_dtype=bfloat16: the input, every param and every value of the program are
// bf16; the params are the f32 model's draws rounded to nearest even (bf16 is an f32's top half).
TEST(Cnn, Bf16IsEveryValueWithTheF32DrawsRounded) {
  const Model f32 = tiny_cnn("nothing_saveable", true, 3);
  const Model bf16 = tiny_cnn("nothing_saveable", true, 3, DType::kBF16);
  const std::string text = print_program(bf16.program);
  EXPECT_EQ(text.find("f32["), std::string::npos) << text;
  ASSERT_EQ(bf16.arguments.size(), f32.arguments.size());
  auto rounded = [](double v) {
    const uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(v));
    return static_cast<double>(std::bit_cast<float>((bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u));
  };
  size_t changed = 0;
  for (size_t a = 1; a < f32.arguments.size(); ++a) {
    EXPECT_EQ(bf16.arguments[a].type.dtype, DType::kBF16) << a;
    ASSERT_EQ(bf16.arguments[a].data.size(), f32.arguments[a].data.size());
    for (size_t i = 0; i < f32.arguments[a].data.size(); ++i) {
      EXPECT_EQ(bf16.arguments[a].data[i], rounded(f32.arguments[a].data[i])) << a << " " << i;
      changed += bf16.arguments[a].data[i] != f32.arguments[a].data[i];
    }
  }
  EXPECT_GT(changed, 0u);  // the draws do lose bits
  const GradientResult g = interpret_gradient(linearize_with(bf16.program), {}, bf16.arguments, Arithmetic::kFloat32);
  EXPECT_EQ(g.outputs[0].type.dtype, DType::kBF16);
  EXPECT_THROW(ModelBuilder().dtype(DType::kF16), Error);
}

TEST(Cnn, ConvNeedsSpatialDims) {
  EXPECT_EQ(usage_error([] { ModelBuilder().conv(4).build(2, 3); }),
            "conv(4) needs an input [batch, spatial..., channels], not [2,3]");
  EXPECT_EQ(usage_error([] { ModelBuilder().resnet_block(4, 0); }),
            "resnet_block(4, 0) needs features and a stride of at least 1");
}

}  // namespace
}  // namespace rematkit::testing
