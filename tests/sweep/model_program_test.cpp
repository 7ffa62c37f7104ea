// A sweep model's program without its values (model_program): the program, trained arguments and
// policy that instantiate gives with values drawn, for every kind of model; and a Llama at 7B and
// 70B size, whose values would be tens and hundreds of gigabytes, traced and planned without them.
#include <gtest/gtest.h>

#include <fstream>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#include "support/test_support.hpp"

namespace rematkit {
namespace {

sweep::ModelSpec spec(const std::string& entry) {
  return sweep::parse_sweep("models:\n  - " + entry + "\npolicies: [everything_saveable]\nbackends: [reference]\n", "<test>")
      .models[0];
}

class ModelProgramOfAModel : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelProgramOfAModel, IsTheProgramInstantiateDrawsValuesFor) {
  const sweep::ModelSpec model = spec(GetParam());
  const sweep::ModelInstance drawn = sweep::instantiate(model, "dots_saveable", 3);
  const sweep::ModelProgram traced = sweep::model_program(model, "dots_saveable");
  ASSERT_EQ(drawn.arguments.size(), drawn.program.invars.size());
  EXPECT_EQ(print_program(traced.program), print_program(drawn.program));
  EXPECT_EQ(traced.trained, drawn.trained);
  EXPECT_EQ(traced.whole_program_policy, drawn.whole_program_policy);
}

INSTANTIATE_TEST_SUITE_P(
    Models, ModelProgramOfAModel,
    ::testing::Values("mlp: {input: 16, depth: 3, width: 16, batch: 4, activation: tanh, remat: whole}",
                    "mlp: {input: 8, depth: 4, width: 8, batch: 2, remat_scan: [2, 2]}",
                    "transformer: {layers: 2, batch: 2, sequence: 8, model: 16, heads: 2, mlp: 32, remat: per_layer}",
                    "transformer: {layers: 3, batch: 2, sequence: 8, model: 16, heads: 2, mlp: 32, loop: scan, remat: whole}",
                    "gpt: {layers: 2, batch: 1, sequence: 8, model: 16, heads: 2, vocab: 32, dropout: 0.1, remat: per_layer}",
                    "gpt: {layers: 2, batch: 1, sequence: 8, model: 16, heads: 2, vocab: 32, dtype: bf16, loop: scan}",
                    "llama: {layers: 4, batch: 2, sequence: 8, model: 16, heads: 4, kv_heads: 2, vocab: 32, remat_scan: [2, 2]}",
                    "cnn: {batch: 2, image: 8, channels: 3, blocks: [4, 8], downsample: true, classes: 10, remat: per_layer}"));

TEST(ModelProgramOfAFile, TrainsWhatInstantiateTrains) {
  const std::string file = testing::temp_dir() + "/two.jaxpr";
  std::ofstream(file) << "{ lambda ; x:f32[4] w:f32[4,4] n:i32[]. let\n"
                         "    y:f32[4] = dot_general[dimension_numbers=(([0], [0]), ([], []))] x w\n"
                         "    z:f32[] = reduce_sum[axes=(0,)] y\n  in (z,) }\n";
  for (const std::string& wrt : {std::string(), std::string(", wrt: [w]")}) {
    SCOPED_TRACE(wrt);
    const sweep::ModelSpec model = spec("program: {file: " + file + wrt + "}");
    const sweep::ModelInstance drawn = sweep::instantiate(model, "nothing_saveable", 0);
    const sweep::ModelProgram traced = sweep::model_program(model, "nothing_saveable");
    EXPECT_EQ(traced.trained, drawn.trained);
    EXPECT_EQ(traced.trained, wrt.empty() ? (std::vector<size_t>{0, 1}) : (std::vector<size_t>{1}));
    EXPECT_EQ(traced.whole_program_policy, "nothing_saveable");
    EXPECT_EQ(print_program(traced.program), print_program(drawn.program));
  }
}

// The bytes of the trained arguments, from their types.
int64_t trained_bytes(const sweep::ModelProgram& m) {
  int64_t bytes = 0;
  for (size_t i : m.trained) bytes += m.program.vars[m.program.invars[i]].type.bytes();
  return bytes;
}

// Llama 2's sizes in bf16, the blocks scanned: its parameter count (6,738,415,616 at 7B,
// 68,976,648,192 at 70B) in the program's types, at two bytes each, with no value drawn.
TEST(ModelProgramAtScale, ALlamaAt7BAnd70BIsTracedWithoutItsValues) {
  const sweep::ModelProgram b7 = sweep::model_program(
      spec("llama: {layers: 32, batch: 4, sequence: 2048, model: 4096, heads: 32, mlp: 11008, vocab: 32000, dtype: bf16, loop: scan}"),
      "everything_saveable");
  EXPECT_EQ(trained_bytes(b7), int64_t{6'738'415'616} * 2);
  EXPECT_EQ(b7.trained.size(), 1u + 9 + 2);  // the embedding, nine stacked block params, the norm and the head
  const sweep::ModelProgram b70 = sweep::model_program(
      spec("llama: {layers: 80, batch: 1, sequence: 4096, model: 8192, heads: 64, kv_heads: 8, mlp: 28672, vocab: 32000, "
           "dtype: bf16, loop: scan}"),
      "everything_saveable");
  EXPECT_EQ(trained_bytes(b70), int64_t{68'976'648'192} * 2);

  // Its step is planned from the program alone: the plan holds at least the params and their
  // gradients.
  LinearizeOptions options;
  options.policies = &default_plugins().policies();
  options.differentiate = b7.trained;
  const StepProgram step = build_step_program(linearize(b7.program, options), BackendOptions{{"reference"}, &default_plugins()},
                                              Pass::kBackward, InputMode::kLoadedEachRun);
  EXPECT_GE(step.layout().arena(MemorySpace::kDevice), 2 * trained_bytes(b7));
}

}  // namespace
}  // namespace rematkit
