// build_transformer, the sweep's `transformer:` model: what it is made of (batched dot_generals over
// (batch, head), no normalisation), where `remat` puts its checkpoints, that scanned blocks compute
// the unrolled ones with the same values, and that no value is drawn under ModelValues::kNone.
#include <gtest/gtest.h>

#include <set>

#include "rematkit/flax/transformer.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

TransformerConfig tiny() {
  TransformerConfig c;
  c.layers = 4;
  c.batch = 2;
  c.sequence = 3;
  c.model = 8;
  c.heads = 2;
  c.mlp = 6;
  return c;
}

// The checkpoint equations at the program's top level (not those nested in their bodies).
size_t top_level_checkpoints(const Program& p) {
  size_t n = 0;
  for (const Equation& e : p.eqns) n += e.prim == Prim::kCheckpoint;
  return n;
}

TEST(Transformer, IsMadeOfAttentionAndAReluMlpWithoutNormalisation) {
  const Model m = build_transformer(tiny(), "nothing_saveable");
  const std::set<std::string> prims = primitives_of(m.program);
  for (const char* p : {"dot_general", "softmax", "relu", "reshape", "transpose", "checkpoint", "reduce_sum"})
    EXPECT_TRUE(prims.count(p)) << p;
  for (const char* p : {"rsqrt", "gather", "tanh"}) EXPECT_FALSE(prims.count(p)) << p;
  // x, then Wq, Wk, Wv, Wo, W1, W2 per block; every one but x a param.
  ASSERT_EQ(m.arguments.size(), 1u + 6 * 4);
  EXPECT_EQ(m.params.size(), 6u * 4);
  EXPECT_EQ(m.params.front(), 1u);
  EXPECT_EQ(m.arguments[5].type.shape, (Shape{8, 6}));  // block 0's W1
  EXPECT_EQ(m.arguments[6].type.shape, (Shape{6, 8}));  // block 0's W2
  EXPECT_TRUE(m.tensor_splits.empty());
}

TEST(Transformer, RematPlacesTheCheckpoints) {
  TransformerConfig c = tiny();
  EXPECT_EQ(top_level_checkpoints(build_transformer(c, "nothing_saveable", 0, ModelValues::kNone).program), 4u);
  c.remat = RematPlacement::kWhole;
  EXPECT_EQ(top_level_checkpoints(build_transformer(c, "nothing_saveable", 0, ModelValues::kNone).program), 1u);
  c.remat = RematPlacement::kNone;
  EXPECT_FALSE(primitives_of(build_transformer(c, "nothing_saveable", 0, ModelValues::kNone).program).count("checkpoint"));
}

TEST(Transformer, ScannedBlocksAreTheUnrolledBlocks) {
  TransformerConfig c = tiny();
  const Model plain = build_transformer(c, "nothing_saveable", 5);
  const BackendOptions reference{{"reference"}, &default_plugins()};
  const GradientResult expected = run_gradient(linearize_with(plain.program), {}, plain.arguments, reference);
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2}}) {
    SCOPED_TRACE(lengths.size() == 1 ? "scan" : "remat_scan");
    c.scan_lengths = lengths;
    const Model scanned = build_transformer(c, "nothing_saveable", 5);
    ASSERT_EQ(scanned.arguments.size(), 1u + 6);
    EXPECT_EQ(scanned.params, (std::vector<size_t>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(scanned.arguments[0].data, plain.arguments[0].data);
    const GradientResult got = run_gradient(linearize_with(scanned.program), {}, scanned.arguments, reference);
    EXPECT_EQ(got.outputs[0].data, expected.outputs[0].data);
    for (size_t k = 0; k < 6; ++k) {
      std::vector<double> values, gradients;
      for (size_t l = 0; l < 4; ++l) {
        const std::vector<double>& v = plain.arguments[1 + l * 6 + k].data;
        const std::vector<double>& g = expected.gradients[1 + l * 6 + k]->data;
        values.insert(values.end(), v.begin(), v.end());
        gradients.insert(gradients.end(), g.begin(), g.end());
      }
      EXPECT_EQ(scanned.arguments[1 + k].data, values) << "weight " << k;
      EXPECT_EQ(got.gradients[1 + k]->data, gradients) << "weight " << k;
    }
  }
}

TEST(Transformer, WithoutValuesGivesTheSameProgramAndParams) {
  for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{}, std::vector<int64_t>{4}}) {
    TransformerConfig c = tiny();
    c.scan_lengths = lengths;
    const Model drawn = build_transformer(c, "dots_saveable", 3);
    const Model none = build_transformer(c, "dots_saveable", 3, ModelValues::kNone);
    EXPECT_TRUE(none.arguments.empty());
    EXPECT_EQ(print_program(none.program), print_program(drawn.program));
    EXPECT_EQ(none.params, drawn.params);
  }
}

TEST(Transformer, BadSizesAreRefused) {
  TransformerConfig c = tiny();
  c.heads = 3;
  EXPECT_EQ(usage_error([&] { build_transformer(c, "nothing_saveable"); }), "transformer: model (8) must be a multiple of heads (3)");
  c = tiny();
  c.scan_lengths = {3};
  EXPECT_EQ(usage_error([&] { build_transformer(c, "nothing_saveable"); }),
            "transformer: the scan lengths multiply to 3, not the 4 layers");
}

}  // namespace
}  // namespace rematkit::testing
