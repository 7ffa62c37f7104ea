// A model built with ModelValues::kNone, as jax.eval_shape(model.init, ...) traces it: the drawn
// model's program, params and keys, with no value drawn. Every builder of models is checked: a Flax
// module's init, ModelBuilder, build_gpt and build_llama, unrolled and scanned.
#include <gtest/gtest.h>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/llama.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/flax/module.hpp"
#include "rematkit/ir/printer.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// `none` is `drawn` without its values: the same program text and params, no arguments. `drawn`
// has a value for every argument, so the two differ in that alone.
void expect_drawn_without_values(const Model& drawn, const Model& none) {
  ASSERT_EQ(drawn.arguments.size(), drawn.program.invars.size());
  EXPECT_EQ(print_program(none.program), print_program(drawn.program));
  EXPECT_EQ(none.params, drawn.params);
  EXPECT_TRUE(none.arguments.empty());
}

TEST(ModelValues, AModulesInitWithoutValuesKeepsEveryParamsTypeAndKey) {
  const Type x_type{DType::kF32, {3, 5}, MemorySpace::kDevice};
  const flax::Remat module(std::make_shared<flax::MLP>(std::vector<int64_t>{4, 6, 2}), "dots_saveable");
  const random::Key key = random::prng_key(7);
  const flax::InitializedModule drawn = flax::init_module(module, key, x_type, {}, true);
  const flax::InitializedModule none = flax::init_module(module, key, x_type, {}, true, ModelValues::kNone);
  EXPECT_EQ(print_program(none.apply), print_program(drawn.apply));
  EXPECT_EQ(none.argument_params, drawn.argument_params);
  ASSERT_EQ(none.params.size(), drawn.params.size());
  for (size_t i = 0; i < drawn.params.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(none.params[i].path, drawn.params[i].path);
    EXPECT_EQ(none.params[i].type, drawn.params[i].type);
    EXPECT_EQ(none.params[i].key, drawn.params[i].key);  // the RNG stream advances as when drawing
    EXPECT_EQ(drawn.params[i].value.size(), static_cast<size_t>(drawn.params[i].type.num_elements()));
    EXPECT_TRUE(none.params[i].value.empty());
  }
}

TEST(ModelValues, ABuiltModelWithoutValuesIsTheDrawnOnesProgram) {
  ModelBuilder tokens;  // an embedding, attention with dropout, a scan of layers: every kind of param and input
  tokens.embedding(13, 8).layer_norm().attention(2, 0.1).scan(3, [](ModelBuilder& layer) { layer.dense(8).gelu(); }).dense(4);
  expect_drawn_without_values(tokens.build(Shape{2, 5}, 3), tokens.build(Shape{2, 5}, 3, Loss::kSumOfSquares, ModelValues::kNone));

  ModelBuilder images;
  images.checkpoint("nothing_saveable", [](ModelBuilder& b) { b.resnet_block(4, 2); }).global_average_pool().dense(3);
  expect_drawn_without_values(images.build(Shape{2, 6, 6, 3}, 1, Loss::kSum),
                              images.build(Shape{2, 6, 6, 3}, 1, Loss::kSum, ModelValues::kNone));
}

TEST(ModelValues, GptAndLlamaWithoutValuesAreTheDrawnOnesPrograms) {
  GptConfig gpt;  // the defaults are small
  gpt.dropout = 0.1;  // the dropout key is an input, not a param
  expect_drawn_without_values(build_gpt(gpt, "dots_saveable", 5), build_gpt(gpt, "dots_saveable", 5, ModelValues::kNone));
  gpt.dropout = 0;
  gpt.dtype = DType::kBF16;
  gpt.scan_lengths = {2};
  expect_drawn_without_values(build_gpt(gpt, "dots_saveable", 5), build_gpt(gpt, "dots_saveable", 5, ModelValues::kNone));

  LlamaConfig llama;
  llama.layers = 4;
  expect_drawn_without_values(build_llama(llama, "nothing_saveable"), build_llama(llama, "nothing_saveable", 0, ModelValues::kNone));
  llama.scan_lengths = {2, 2};
  expect_drawn_without_values(build_llama(llama, "nothing_saveable"), build_llama(llama, "nothing_saveable", 0, ModelValues::kNone));
}

}  // namespace
}  // namespace rematkit::testing
