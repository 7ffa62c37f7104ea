// The llama model: what it is made of (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU,
// an untied head), that its gradient is right (finite differences in the exact-f64 interpreter),
// that rotary embeddings rotate each pair by position / 10000^(2i/Dh) (worked out here with
// std::sin and std::cos), that grouped-query attention shares each k and v head, and that scanned
// blocks compute the unrolled ones.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "rematkit/flax/llama.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

LlamaConfig tiny() {
  LlamaConfig c;
  c.vocab = 11;
  c.sequence = 4;
  c.model = 8;
  c.heads = 2;
  c.kv_heads = 1;
  c.layers = 2;
  c.mlp = 12;
  c.batch = 2;
  return c;
}

TEST(Llama, IsMadeOfRmsNormRotaryGroupedQueryAttentionAndSwiGlu) {
  const Model m = build_llama(tiny(), "nothing_saveable");
  const std::set<std::string> prims = primitives_of(m.program);
  for (const char* p : {"gather", "rsqrt", "square", "iota", "pow", "sin", "cos", "split", "concatenate", "logistic",
                        "custom_jvp_call", "select_n", "checkpoint", "dot_general"})
    EXPECT_TRUE(prims.count(p)) << p;
  for (const char* p : {"tanh", "integer_pow", "random_bits"}) EXPECT_FALSE(prims.count(p)) << p;  // GPT-2's, not Llama's
  // ids, targets, the embedding, 9 params a block (no biases), the final norm's scale and the head.
  ASSERT_EQ(m.arguments.size(), 2u + 1 + 9 * 2 + 2);
  EXPECT_EQ(m.params.size(), 1u + 9 * 2 + 2);
  // Grouped-query attention: one k and one v head of width 4 for the two query heads.
  EXPECT_EQ(m.arguments[2 + 1 + 2].type.shape, (Shape{8, 4}));  // layers_0_attention_k_kernel
  EXPECT_EQ(m.arguments[2 + 1 + 3].type.shape, (Shape{8, 4}));  // layers_0_attention_v_kernel
  // The head is untied: [model, vocab], not the embedding.
  EXPECT_EQ(m.arguments.back().type.shape, (Shape{8, 11}));
}

TEST(Llama, GradientMatchesFiniteDifferences) {
  for (int64_t kv_heads : {1, 2}) {
    SCOPED_TRACE(kv_heads);
    LlamaConfig c = tiny();
    c.layers = 1;
    c.kv_heads = kv_heads;
    const Model m = build_llama(c, "nothing_saveable", 3);
    expect_gradient_matches_finite_differences(m.program, m.arguments, m.params);
  }
}

TEST(Llama, RotaryEmbeddingsRotateEachPairByItsPositionsAngle) {
  // The equations the model traces for its rotary embeddings, on x [1, 3, 1, 4] (three positions,
  // one head of width 4), evaluated in f64: each half-split pair (x_i, x_{i+2}) at position s
  // rotated by s / 10000^(2i/4), worked out here with std::sin and std::cos.
  const Model m = build_llama(tiny(), "nothing_saveable");
  const std::string text = R"({ lambda ; x:f32[1,3,1,4]. let
    l:f32[2] = iota[dimension=0 dtype=float32 shape=(2,)]
    m:f32[2] = mul 2.0:f32[] l
    n:f32[2] = div m 4.0:f32[]
    o:f32[2] = pow 10000.0:f32[] n
    p:f32[3] = iota[dimension=0 dtype=float32 shape=(3,)]
    q:f32[3,2] = broadcast_in_dim[shape=(3, 2) broadcast_dimensions=(0,)] p
    r:f32[3,2] = broadcast_in_dim[shape=(3, 2) broadcast_dimensions=(1,)] o
    s:f32[3,2] = div q r
    t:f32[3,2] = sin s
    u:f32[1,3,1,2] = broadcast_in_dim[shape=(1, 3, 1, 2) broadcast_dimensions=(1, 3)] t
    v:f32[3,2] = cos s
    w:f32[1,3,1,2] = broadcast_in_dim[shape=(1, 3, 1, 2) broadcast_dimensions=(1, 3)] v
    y:f32[1,3,1,2] = split[sizes=(2, 2) axis=3 output=0] x
    z:f32[1,3,1,2] = split[sizes=(2, 2) axis=3 output=1] x
    ba:f32[1,3,1,2] = mul y w
    bb:f32[1,3,1,2] = mul z u
    bc:f32[1,3,1,2] = sub ba bb
    bd:f32[1,3,1,2] = mul z w
    be:f32[1,3,1,2] = mul y u
    bf:f32[1,3,1,2] = add bd be
    bg:f32[1,3,1,4] = concatenate[dimension=3] bc bf
  in (bg,) })";
  // The model traces exactly these equations for its rotary embeddings (sizes aside).
  const std::string printed = print_program(m.program);
  for (const char* line : {"pow 10000.0:f32[]", "sin ", "cos ", "split[sizes=(2, 2) axis=3 output=1]", "concatenate[dimension=3]"})
    EXPECT_NE(printed.find(line), std::string::npos) << line;
  const Program p = parse_program(text, "rotary");
  const std::vector<double> x = {1, 2, 3, 4, -1, 0.5, 2, -3, 0.25, -2, 1, 1};
  const std::vector<Tensor> out = evaluate_program(p, {}, {Tensor{Type{DType::kF32, {1, 3, 1, 4}, MemorySpace::kDevice}, x}},
                                           Arithmetic::kFloat64);
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < 2; ++i) {
      const double angle = s / std::pow(10000.0, 2.0 * i / 4.0);
      const double a = x[static_cast<size_t>(4 * s + i)], b = x[static_cast<size_t>(4 * s + i + 2)];
      EXPECT_NEAR(out[0].data[static_cast<size_t>(4 * s + i)], a * std::cos(angle) - b * std::sin(angle), 1e-12);
      EXPECT_NEAR(out[0].data[static_cast<size_t>(4 * s + i + 2)], b * std::cos(angle) + a * std::sin(angle), 1e-12);
    }
}

TEST(Llama, GroupedQueryAttentionWithOneKvHeadPerQueryHeadIsMultiHead) {
  // kv_heads = heads repeats nothing: no broadcast over a group axis; kv_heads = 1 broadcasts it.
  LlamaConfig c = tiny();
  c.kv_heads = c.heads;
  const std::string multi = print_program(build_llama(c, "nothing_saveable").program);
  c.kv_heads = 1;
  const std::string grouped = print_program(build_llama(c, "nothing_saveable").program);
  EXPECT_EQ(multi.find("f32[2,4,1,2,4] = broadcast_in_dim"), std::string::npos);
  EXPECT_NE(grouped.find("f32[2,4,1,2,4] = broadcast_in_dim"), std::string::npos) << "k and v repeated for 2 query heads";
}

TEST(Llama, EveryPolicyGivesTheSameGradientsAndBf16HalvesTheFloatingResiduals) {
  std::optional<GradientResult> first;
  int64_t f32_bytes = 0;
  for (const char* policy : {"everything_saveable", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"}) {
    SCOPED_TRACE(policy);
    LlamaConfig c = tiny();
    const Model m = build_llama(c, policy);
    const Linearization lin = linearize_with(m.program);
    const GradientResult g = interpret_gradient(lin, {}, m.arguments, Arithmetic::kFloat32);
    if (std::string(policy) == "everything_saveable") f32_bytes = residual_bytes(lin);
    if (!first) first = g;
    EXPECT_EQ(g.outputs[0].data, first->outputs[0].data);
    for (size_t p : m.params) EXPECT_EQ(g.gradients[p]->data, first->gradients[p]->data) << "argument " << p;
    c.dtype = DType::kBF16;
    const Linearization bf16 = linearize_with(build_llama(c, policy).program);
    int64_t floating = 0, other = 0, floating_bf16 = 0;
    for (const Residual& r : lin.residuals) (is_floating(r.type.dtype) ? floating : other) += r.type.bytes();
    for (const Residual& r : bf16.residuals)
      if (is_floating(r.type.dtype)) floating_bf16 += r.type.bytes();
    ASSERT_EQ(lin.residuals.size(), bf16.residuals.size());
    EXPECT_EQ(2 * floating_bf16, floating);
  }
  EXPECT_GT(f32_bytes, 0);
}

TEST(Llama, ScannedBlocksAreTheUnrolledBlocks) {
  LlamaConfig c = tiny();
  c.layers = 4;
  const Model plain = build_llama(c, "nothing_saveable");
  const BackendOptions reference{{"reference"}, &default_plugins()};
  const GradientResult expected = run_gradient(linearize_with(plain.program), {}, plain.arguments, reference);
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2}}) {
    SCOPED_TRACE(lengths.size() == 1 ? "scan" : "remat_scan");
    c.scan_lengths = lengths;
    const Model scanned = build_llama(c, "nothing_saveable");
    const GradientResult got = run_gradient(linearize_with(scanned.program), {}, scanned.arguments, reference);
    EXPECT_EQ(got.outputs[0].data, expected.outputs[0].data);
    // Arguments: ids, targets, the embedding, 9 stacked block params, the final norm and the head.
    ASSERT_EQ(scanned.arguments.size(), 2u + 1 + 9 + 2);
    EXPECT_EQ(got.gradients[2]->data, expected.gradients[2]->data);
    for (size_t k = 0; k < 9; ++k) {
      std::vector<double> joined;
      for (size_t l = 0; l < 4; ++l) {
        const std::vector<double>& g = expected.gradients[3 + l * 9 + k]->data;
        joined.insert(joined.end(), g.begin(), g.end());
      }
      EXPECT_EQ(got.gradients[3 + k]->data, joined) << "block param " << k;
    }
    EXPECT_EQ(got.gradients.back()->data, expected.gradients.back()->data);
  }
}

TEST(Llama, BadSizesAreRefused) {
  LlamaConfig c = tiny();
  c.kv_heads = 3;
  EXPECT_EQ(usage_error([&] { build_llama(c, "nothing_saveable"); }), "llama: kv_heads (3) must divide heads (2)");
  c = tiny();
  c.heads = 8;  // a head width of 1: nothing to rotate in pairs
  EXPECT_EQ(usage_error([&] { build_llama(c, "nothing_saveable"); }),
            "llama: model (8) must be heads (8) times an even head width (rotary embeddings rotate pairs)");
}

}  // namespace
}  // namespace rematkit::testing
