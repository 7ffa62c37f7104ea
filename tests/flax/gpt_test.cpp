// The gpt model: what it is made of (the primitives JAX prints for the Flax GPT), that its gradient
// is right (finite differences in the exact-f64 interpreter), that dropout is recomputed from the
// key under any policy, and that bf16 halves what the backward pass keeps.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

GptConfig tiny() {
  GptConfig c;
  c.vocab = 11;
  c.sequence = 4;
  c.model = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.batch = 2;
  return c;
}

TEST(Gpt, IsMadeOfWhatJaxPrintsForIt) {
  GptConfig c = tiny();
  c.dropout = 0.1;
  const Model m = build_gpt(c, "nothing_saveable");
  const std::set<std::string> prims = primitives_of(m.program);
  for (const char* p : {"gather", "iota", "ge", "select_n", "custom_jvp_call", "split", "rsqrt", "tanh", "integer_pow",
                        "random_fold_in", "random_bits", "bitcast_convert_type", "checkpoint", "dot_general"})
    EXPECT_TRUE(prims.count(p)) << p;
  // ids, targets, the key, then 2 embeddings, 12 params a block and the final LayerNorm's 2.
  EXPECT_EQ(m.arguments.size(), 3u + 2 + 12 * 2 + 2);
  EXPECT_EQ(m.params.size(), 2u + 12 * 2 + 2);
  EXPECT_EQ(m.arguments[2].type.dtype, DType::kKeyFry);
  // Each block's softmax is differentiated with JAX's _softmax_jvp, not through its body.
  const Linearization lin = linearize_with(m.program);
  ASSERT_EQ(lin.graph.custom_calls.size(), 2u);
  for (const CustomCall& call : lin.graph.custom_calls) EXPECT_TRUE(call.uses_jax_rule) << call.name;
}

TEST(Gpt, GradientMatchesFiniteDifferences) {
  for (double rate : {0.0, 0.25}) {
    SCOPED_TRACE(rate);
    GptConfig c = tiny();
    c.dropout = rate;
    c.layers = 1;
    const Model m = build_gpt(c, "nothing_saveable", 3);
    expect_gradient_matches_finite_differences(m.program, m.arguments, m.params);
  }
}

TEST(Gpt, DropoutGradientsAreBitIdenticalUnderEveryPolicy) {
  GptConfig c = tiny();
  c.dropout = 0.2;
  std::optional<GradientResult> first;
  for (const char* policy : {"everything_saveable", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"}) {
    SCOPED_TRACE(policy);
    const Model m = build_gpt(c, policy);
    const GradientResult g = interpret_gradient(linearize_with(m.program), {}, m.arguments, Arithmetic::kFloat32);
    if (!first) {
      first = g;
      continue;
    }
    EXPECT_EQ(g.outputs[0].data, first->outputs[0].data);
    for (size_t p : m.params) EXPECT_EQ(g.gradients[p]->data, first->gradients[p]->data) << "argument " << p;
  }
}

TEST(Gpt, Bf16KeepsHalfTheResidualBytes) {
  // The same residuals in each dtype: every floating one at 2 bytes an element instead of 4; what
  // is not floating (the token ids the embedding's gather keeps) is the same.
  auto bytes = [](const Linearization& lin) {
    std::pair<int64_t, int64_t> floating_and_other{0, 0};
    for (const Residual& r : lin.residuals)
      (is_floating(r.type.dtype) ? floating_and_other.first : floating_and_other.second) += r.type.bytes();
    return floating_and_other;
  };
  GptConfig c = tiny();
  c.dropout = 0.1;
  for (const char* policy : {"dots_saveable", "nothing_saveable", "everything_saveable", "dots_with_no_batch_dims_saveable"}) {
    SCOPED_TRACE(policy);
    c.dtype = DType::kF32;
    const Linearization f32 = linearize_with(build_gpt(c, policy).program);
    c.dtype = DType::kBF16;
    const Linearization bf16 = linearize_with(build_gpt(c, policy).program);
    ASSERT_EQ(f32.residuals.size(), bf16.residuals.size());
    EXPECT_GT(bytes(f32).first, 0);
    EXPECT_EQ(2 * bytes(bf16).first, bytes(f32).first);
    EXPECT_EQ(bytes(bf16).second, bytes(f32).second);
    EXPECT_LT(residual_bytes(bf16), residual_bytes(f32) / 2 + bytes(f32).second);
  }
}

// nn.scan and nn.remat_scan over the blocks compute what the unrolled blocks compute, from the same
// params stacked in block order: the loss and every gradient bit for bit on the reference backend.
TEST(Gpt, ScannedBlocksAreTheUnrolledBlocks) {
  GptConfig c = tiny();
  c.layers = 4;
  const Model plain = build_gpt(c, "nothing_saveable");
  const BackendOptions reference{{"reference"}, &default_plugins()};
  const GradientResult expected = run_gradient(linearize_with(plain.program), {}, plain.arguments, reference);
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2}}) {
    SCOPED_TRACE(lengths.size() == 1 ? "scan" : "remat_scan");
    c.scan_lengths = lengths;
    const Model scanned = build_gpt(c, "nothing_saveable");
    const GradientResult got = run_gradient(linearize_with(scanned.program), {}, scanned.arguments, reference);
    EXPECT_EQ(got.outputs[0].data, expected.outputs[0].data);
    // Arguments: ids, targets, wte, wpe, then 12 stacked block params, then ln_f's two.
    ASSERT_EQ(scanned.arguments.size(), 2u + 2 + 12 + 2);
    for (size_t a : {2u, 3u}) EXPECT_EQ(got.gradients[a]->data, expected.gradients[a]->data) << a;
    for (size_t k = 0; k < 12; ++k) {
      std::vector<double> joined;
      for (size_t l = 0; l < 4; ++l) {
        const std::vector<double>& g = expected.gradients[4 + l * 12 + k]->data;
        joined.insert(joined.end(), g.begin(), g.end());
      }
      EXPECT_EQ(got.gradients[4 + k]->data, joined) << "block param " << k;
    }
    EXPECT_EQ(got.gradients[16]->data, expected.gradients[plain.arguments.size() - 2]->data);
  }
  c.scan_lengths = {3};
  EXPECT_EQ(usage_error([&] { build_gpt(c, "nothing_saveable"); }),
            "gpt: the scan lengths multiply to 3, not the 4 layers");
}

// Dropout inside scanned blocks, as nn.scan with split_rngs={'dropout': True} traces it: the
// stream's key split once per scan into a key per iteration, scanned as the last xs (and split again
// inside remat_scan's checkpoint). The gradient is right, the same under every policy, and the
// masks are applied.
TEST(Gpt, ScannedBlocksWithDropoutSplitTheKeyPerBlock) {
  GptConfig c = tiny();
  c.model = 4;  // few params: the finite differences take two runs of the program per param element
  c.mlp = 4;
  c.sequence = 3;
  c.batch = 1;
  c.layers = 4;
  c.dropout = 0.25;
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2}}) {
    SCOPED_TRACE(lengths.size() == 1 ? "scan" : "remat_scan");
    c.scan_lengths = lengths;
    const Model m = build_gpt(c, "nothing_saveable", 3);
    const std::string text = print_program(m.program);
    const auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
      return n;
    };
    if (lengths.size() == 1) {
      EXPECT_EQ(count("random_split[shape=(4,)]"), 1u) << text;
    } else {
      EXPECT_EQ(count("random_split[shape=(2,)]"), 2u) << text;  // the outer scan's, and inside its checkpoint
    }
    EXPECT_EQ(count("key<fry>[4]") + count("key<fry>[2]"), lengths.size()) << text;  // the split keys, one binder per scan
    if (lengths.size() == 2) expect_gradient_matches_finite_differences(m.program, m.arguments, m.params);  // both splits
    const GradientResult kept = interpret_gradient(linearize_with(build_gpt(c, "everything_saveable", 3).program), {}, m.arguments,
                                             Arithmetic::kFloat32);
    const GradientResult recomputed = interpret_gradient(linearize_with(m.program), {}, m.arguments, Arithmetic::kFloat32);
    EXPECT_EQ(kept.outputs[0].data, recomputed.outputs[0].data);
    for (size_t p : m.params) EXPECT_EQ(kept.gradients[p]->data, recomputed.gradients[p]->data) << "argument " << p;
    GptConfig plain = c;
    plain.dropout = 0;
    const Model without = build_gpt(plain, "nothing_saveable", 3);
    std::vector<Tensor> same_params = without.arguments;  // the model without its key argument
    const GradientResult undropped = interpret_gradient(linearize_with(without.program), {}, same_params, Arithmetic::kFloat32);
    EXPECT_NE(undropped.outputs[0].data, recomputed.outputs[0].data);
  }
}

TEST(Gpt, BadSizesAreRefused) {
  GptConfig c = tiny();
  c.heads = 3;
  try {
    build_gpt(c, "nothing_saveable");
    FAIL() << "heads that do not divide model were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "gpt: model (8) must be a multiple of heads (3)");
  }
}

}  // namespace
}  // namespace rematkit::testing
