// Fused steps (fusion_steps.hpp): which equations become one kernel, on which backend, and that a
// fused program computes what the same program run equation by equation computes: the same bits on
// highway (its fused kernels call the kernels the parts run alone) and on oneDNN (its bias post-op
// adds after the product, as the add alone does), with the same residuals kept and a peak that is
// measured as predicted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/model_builder.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "rematkit/runtime/training_step.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

// One Dense layer with a relu and a second without, then the loss: what the sweep's mlp is made of.
constexpr const char* kDenseLayers = R"({ lambda ; x:f32[4,8] b1:f32[8] w1:f32[8,8] b2:f32[8] w2:f32[8,8]. let
    a:f32[4,8] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
    c:f32[1,8] = reshape[new_sizes=(1, 8) dimensions=None] b1
    d:f32[4,8] = add a c
    e:f32[4,8] = relu d
    f:f32[4,8] = dot_general[dimension_numbers=(([1], [0]), ([], []))] e w2
    g:f32[1,8] = reshape[new_sizes=(1, 8) dimensions=None] b2
    h:f32[4,8] = add f g
    l:f32[] = reduce_sum[axes=(0, 1)] h
  in (l,) })";

BackendOptions fused_on(std::vector<std::string> backends, BackendOptions::Fusion fusion) {
  BackendOptions options{std::move(backends), &default_plugins()};
  options.fusion = fusion;
  return options;
}

// The plan on `backends` fused wherever a backend can (FusionChoice{}), not only as far as the peak
// allows: what each test here sets beside the unfused plan.
StepProgram fused_everywhere(const Linearization& lin, const std::vector<std::string>& backends,
                             Pass last_pass = Pass::kBackward) {
  return build_step_program(lin, fused_on(backends, BackendOptions::Fusion::kUnlessPeakRises), last_pass,
                            InputMode::kLoadedEachRun, FusionChoice{});
}

OneShotRunner fused_everywhere_runner(const Linearization& lin, const std::vector<std::string>& backends,
                                      Pass last_pass = Pass::kBackward) {
  return OneShotRunner(fused_everywhere(lin, backends, last_pass), fused_on(backends, BackendOptions::Fusion::kUnlessPeakRises));
}

// Each fused step as "backend: prim + prim + ...", in program order.
std::vector<std::string> fused_steps(const StepProgram& program, Pass pass) {
  std::vector<std::string> out;
  for (const Step& step : program.steps()) {
    if (step.fused.empty() || step.pass != pass) continue;
    std::string text = step.kernel->backend() + ":";
    for (size_t i = 0; i < step.fused.size(); ++i)
      text += std::string(i ? " + " : " ") + std::string(prim_name(program.linearization().graph.eqns[step.fused[i]].prim));
    out.push_back(text);
  }
  return out;
}

// Outputs and every gradient within `relative` of the expected run's.
void expect_gradient_near(const GradientResult& got, const GradientResult& expected, double relative) {
  expect_outputs_near(got.outputs, expected.outputs, relative);
  ASSERT_EQ(got.gradients.size(), expected.gradients.size());
  for (size_t i = 0; i < got.gradients.size(); ++i) {
    ASSERT_TRUE(got.gradients[i] && expected.gradients[i]);
    expect_outputs_near({*got.gradients[i]}, {*expected.gradients[i]}, relative);
  }
}

// Values some step's buffer holds.
std::set<ValueId> buffered(const StepProgram& program) {
  std::set<ValueId> values;
  for (size_t b = 0; b < program.layout().buffers.size(); ++b) values.insert(program.buffer_value(static_cast<int>(b)));
  return values;
}

TEST(Fusion, ADenseLayerWithItsActivationIsOneHighwayKernel) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(kDenseLayers, "dense");
  const Linearization lin = linearize_with(program);
  const StepProgram steps = fused_everywhere(lin, {"highway", "reference"});
  // Forward: the first product, its bias add, the relu and relu's JVP mask (gt d 0, which reads the
  // same d) are one kernel; the second product and its bias add another. The reshapes of the biases
  // are layout ops, left alone; the sum reads h, the last value, alone.
  EXPECT_EQ(fused_steps(steps, Pass::kForward),
            (std::vector<std::string>{"highway: dot_general + add + relu + gt", "highway: dot_general + add"}));
  // Backward: the product giving e's cotangent, then the mask selecting it (select_n with relu's
  // zeros, spread from a scalar inside the kernel).
  const std::vector<std::string> backward = fused_steps(steps, Pass::kBackward);
  ASSERT_EQ(backward.size(), 1u);
  EXPECT_EQ(backward[0].rfind("highway: dot_general + ", 0), 0u) << backward[0];
  EXPECT_NE(backward[0].find("select_n"), std::string::npos) << backward[0];
  // a and d (the product and the pre-activation) are read only inside the first kernel: no buffer
  // holds them. e (the next product reads it) and the mask (a residual) are its two outputs.
  const std::set<ValueId> held = buffered(steps);
  const Step* first = nullptr;
  for (const Step& step : steps.steps())
    if (!first && step.fused.size() == 4) first = &step;
  ASSERT_NE(first, nullptr);
  const FlatGraph& g = lin.graph;
  auto output_of = [&](size_t part) { return g.eqns[first->fused[part]].outputs[0]; };
  EXPECT_EQ(held.count(output_of(0)), 0u);
  EXPECT_EQ(held.count(output_of(1)), 0u);
  ASSERT_EQ(first->outputs.size(), 2u);
  EXPECT_EQ(steps.buffer_value(first->outputs[0]), output_of(2));
  EXPECT_EQ(steps.buffer_value(first->outputs[1]), output_of(3));
  EXPECT_EQ(steps.buffer_type(first->outputs[1]).dtype, DType::kBool);
}

TEST(Fusion, OneDnnTakesTheBiasAndHighwayTheActivationWithItsMask) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  const Linearization lin = linearize_with(parse_program(kDenseLayers, "dense"));
  const StepProgram steps =
      fused_everywhere(lin, {"onednn", "highway", "reference"});
  // oneDNN's matmul takes the bias and post-ops, but has one output: the relu and its mask both
  // read d, so d must be written, and the relu goes with the mask to highway (the backend that runs
  // gt alone), as one pass over d.
  EXPECT_EQ(fused_steps(steps, Pass::kForward),
            (std::vector<std::string>{"onednn: dot_general + add", "highway: relu + gt", "onednn: dot_general + add"}));
}

TEST(Fusion, ATranscendentalIsFusedOnlyOnTheBackendThatRunsItAlone) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  // oneDNN runs the exp alone (at 4096 elements its estimate beats Highway's), so Highway, which
  // takes the chain for its comparison (oneDNN has none), may not take the exp into it: its exp
  // differs from oneDNN's in the last bit, and a policy that keeps u would run the exp alone. The
  // correctly rounded mul around it may move.
  const Program program = parse_program(R"({ lambda ; x:f32[64,64]. let
    u:f32[64,64] = mul x 0.5:f32[]
    t:f32[64,64] = exp u
    g:bool[64,64] = gt t 0.0:f32[]
    s:f32[64,64] = select_n g u t
    l:f32[] = reduce_sum[axes=(0, 1)] s
  in (l,) })", "tanh_chain");
  const Linearization lin = linearize_with(program);
  const StepProgram steps = fused_everywhere(lin, {"onednn", "highway", "reference"});
  for (const std::string& fused : fused_steps(steps, Pass::kForward)) EXPECT_EQ(fused.find("exp"), std::string::npos) << fused;
  const StepProgram highway_only = fused_everywhere(lin, {"highway", "reference"});
  bool exp_fused = false;
  for (const std::string& fused : fused_steps(highway_only, Pass::kForward)) exp_fused |= fused.find("exp") != std::string::npos;
  EXPECT_TRUE(exp_fused) << "on Highway alone the exp is its own and fuses";
}

TEST(Fusion, AGeluWithItsTanhIsOneHighwayStepWithOneDnnListedFirst) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  // Flax's tanh gelu. Highway's tanh (XLA's rational one) is estimated below oneDNN's at every size,
  // so the tanh is Highway's alone and the whole chain is one pass on Highway, not a Highway chain,
  // a oneDNN tanh and a second Highway chain.
  const Program program = parse_program(R"({ lambda ; x:f32[64,256]. let
    p:f32[64,256] = integer_pow[y=3] x
    q:f32[64,256] = mul 0.044715:f32[] p
    r:f32[64,256] = add x q
    s:f32[64,256] = mul 0.7978846:f32[] r
    t:f32[64,256] = tanh s
    u:f32[64,256] = add 1.0:f32[] t
    v:f32[64,256] = mul 0.5:f32[] u
    y:f32[64,256] = mul x v
    l:f32[] = reduce_sum[axes=(0, 1)] y
  in (l,) })", "gelu");
  const Linearization lin = linearize_with(program);
  const StepProgram steps = fused_everywhere(lin, {"onednn", "highway", "reference"});
  // One fused step (with the JVP's coefficients, x^2 and 1 - t^2, beside the values), on Highway,
  // holding the tanh.
  const std::vector<std::string> fused = fused_steps(steps, Pass::kForward);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].rfind("highway: ", 0), 0u) << fused[0];
  EXPECT_NE(fused[0].find(" tanh "), std::string::npos) << fused[0];
}

TEST(Fusion, ReferenceFirstFusesNothing) {
  // Every part runs on reference alone, which runs no fused equation: nothing may move to highway.
  const Linearization lin = linearize_with(parse_program(kDenseLayers, "dense"));
  const StepProgram steps = fused_everywhere(lin, {"reference", "highway"});
  EXPECT_EQ(steps.fused_steps(), 0u);
}

void expect_same_bits(const GradientResult& a, const GradientResult& b) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) EXPECT_EQ(a.outputs[i].data, b.outputs[i].data) << "output " << i;
  ASSERT_EQ(a.gradients.size(), b.gradients.size());
  for (size_t i = 0; i < a.gradients.size(); ++i) {
    ASSERT_EQ(a.gradients[i].has_value(), b.gradients[i].has_value());
    if (a.gradients[i]) {
      EXPECT_EQ(a.gradients[i]->data, b.gradients[i]->data) << "gradient " << i;
    }
  }
}

class FusionOnCases : public ::testing::TestWithParam<ResidualCase> {};

TEST_P(FusionOnCases, FusedAndUnfusedGiveTheSameBitsKeepTheSameResidualsAndMeasureThePeak) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = load_program(GetParam().program_path);
  const RandomInputs in = random_inputs(program, 5);
  const Linearization lin = linearize_with(program);
  OneShotRunner fused = fused_everywhere_runner(lin, {"highway", "reference"});
  OneShotRunner unfused(lin, fused_on({"highway", "reference"}, BackendOptions::Fusion::kOff));
  EXPECT_EQ(unfused.program().fused_steps(), 0u);
  expect_same_bits(fused.run(in.constants, in.arguments), unfused.run(in.constants, in.arguments));
  const std::vector<ValueId>& a = fused.program().kept_values();
  const std::vector<ValueId>& b = unfused.program().kept_values();
  EXPECT_EQ(std::multiset<ValueId>(a.begin(), a.end()), std::multiset<ValueId>(b.begin(), b.end()));
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
    EXPECT_EQ(fused.measured_peak(space), fused.layout().arena(space)) << memory_space_name(space);
  // By default a fused plan stands only where its peak is no higher.
  OneShotRunner chosen(lin, fused_on({"highway", "reference"}, BackendOptions::Fusion::kUnlessPeakRises));
  EXPECT_LE(chosen.layout().arena(MemorySpace::kDevice) + chosen.layout().arena(MemorySpace::kPinnedHost),
            unfused.layout().arena(MemorySpace::kDevice) + unfused.layout().arena(MemorySpace::kPinnedHost));
}

INSTANTIATE_TEST_SUITE_P(Reference, FusionOnCases, ::testing::ValuesIn(residual_cases()),
                         [](const auto& info) { return info.param.name; });

// A bias of 10 values beside [8, 16, 10]: its period divides no segment of a fused chain (1024
// elements) and no group of rows of an add alone, so each must read it from where the segment or
// row starts; the sum over the middle axis runs block by block. Fused and unfused on highway, both
// against the reference backend.
TEST(Fusion, ABiasIsReadFromItsPlaceWhateverItsPeriod) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[8,16,10] b:f32[10] y:f32[8,16,10]. let
    bb:f32[1,1,10] = reshape[new_sizes=(1, 1, 10) dimensions=None] b
    a:f32[8,16,10] = add x bb
    r:f32[8,16,10] = relu a
    m:f32[8,16,10] = mul r y
    s:f32[8,10] = reduce_sum[axes=(1,)] m
  in (m, s) })", "bias");
  const Linearization lin = linearize_with(program);
  const RandomInputs in = random_inputs(program, 7);
  const GradientResult expected = run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    const std::vector<std::string> backends{"highway", "reference"};
    const StepProgram forward = fused ? fused_everywhere(lin, backends, Pass::kForward)
                                      : build_step_program(lin, fused_on(backends, BackendOptions::Fusion::kOff),
                                                           Pass::kForward, InputMode::kLoadedEachRun);
    const Step* last_kernel = nullptr;
    for (const Step& step : forward.steps())
      if (step.kind == StepKind::kKernel) last_kernel = &step;
    ASSERT_NE(last_kernel, nullptr);
    EXPECT_EQ(last_kernel->kernel->backend(), "highway");
    OneShotRunner runner = fused ? fused_everywhere_runner(lin, backends)
                                 : OneShotRunner(lin, fused_on(backends, BackendOptions::Fusion::kOff));
    expect_gradient_near(runner.run(in.constants, in.arguments), expected, 1e-6);
  }
}

// Dropout's recipe from random bits (jax.random.bernoulli through uniform: a shift and an or into a
// float's mantissa, a bitcast, a sub and the comparison) is one Highway pass over 32-bit lanes, the
// key's bits hashed in each segment rather than written out first; the mask and the output have
// the reference's bits. 300 elements (a partial last vector), and 210077 (segments, chunks on
// threads and a ragged end).
TEST(Fusion, DropoutsBitsBecomeItsMaskInOneHighwayPass) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  for (const auto& [rows, cols] : {std::pair{6, 50}, std::pair{7, 30011}}) {
    const std::string rc = std::to_string(rows) + "," + std::to_string(cols), shape = std::to_string(rows) + ", " + std::to_string(cols);
    const std::string text = "{ lambda ; r:u32[2] x:f32[" + rc + "]. let\n"
                             "  k:key<fry>[] = random_wrap[impl=fry] r\n"
                             "  b:u32[" + rc + "] = random_bits[bit_width=32 shape=(" + shape + ")] k\n"
                             "  g:u32[" + rc + "] = shift_right_logical b 9:u32[]\n"
                             "  h:u32[" + rc + "] = or g 1065353216:u32[]\n"
                             "  i:f32[" + rc + "] = bitcast_convert_type[new_dtype=float32] h\n"
                             "  j:f32[" + rc + "] = sub i 1.0:f32[]\n"
                             "  m:bool[" + rc + "] = lt j 0.9:f32[]\n"
                             "  d:f32[" + rc + "] = div x 0.9:f32[]\n"
                             "  z:f32[" + rc + "] = broadcast_in_dim[shape=(" + shape + ") broadcast_dimensions=()] 0.0:f32[]\n"
                             "  y:f32[" + rc + "] = select_n m z d\n"
                             "in (m, y) }";
    SCOPED_TRACE(text);
    const Program program = parse_program(text, "dropout");
    const Linearization lin = linearize_with(program);
    const RandomInputs in = random_inputs(program, 11, 1, 1e6, false);
    const std::vector<Tensor> expected = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
    const std::vector<std::string> options{"highway", "reference"};
    const StepProgram steps = fused_everywhere(lin, options);
    bool recipe_fused = false;
    for (const std::string& fused : fused_steps(steps, Pass::kForward))
      recipe_fused |= fused.rfind("highway: random_bits + shift_right_logical + or + bitcast_convert_type + sub + lt", 0) == 0;
    EXPECT_TRUE(recipe_fused) << "the bits and their recipe are one fused step";
    const std::vector<Tensor> got = fused_everywhere_runner(lin, options, Pass::kForward).run(in.constants, in.arguments).outputs;
    ASSERT_EQ(got.size(), expected.size());
    for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(got[o].data, expected[o].data) << "output " << o;
    const double n = static_cast<double>(rows * cols);
    double kept = 0;
    for (double v : got[0].data) kept += v;
    EXPECT_GT(kept, 0.8 * n);  // about 90% kept: the bits became uniform floats
    EXPECT_LT(kept, 0.97 * n);
  }
}

// A one-hot's chain (iota of the class numbers, the labels spread along their rows, eq, the mask
// into f32, the product with the logits) is one Highway pass: the iota is computed in each segment,
// not read from a buffer written before. Rows of 1100 classes cross the segments' ends; a second
// iota counts along the middle dim (runs of 1100 equal values) and meets an f32 iota of the rows.
// The results are the unfused plan's bits, the one-hot and the picked logits the reference's, and
// every label's class is picked once.
TEST(Fusion, AOneHotsIotaAndLabelsAreOneHighwayPassWithTheReferenceBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; t:i32[2,3] x:f32[2,3,1100] w:f32[2,3,1100]. let
    i:i32[2,3,1100] = iota[dimension=2 dtype=int32 shape=(2, 3, 1100) sharding=None]
    b:i32[2,3,1100] = broadcast_in_dim[shape=(2, 3, 1100) broadcast_dimensions=(0, 1)] t
    e:bool[2,3,1100] = eq i b
    h:f32[2,3,1100] = convert_element_type[new_dtype=float32 weak_type=False] e
    p:f32[2,3,1100] = mul x h
    l:f32[2,3] = reduce_sum[axes=(2,)] p
    r:i32[2,3,1100] = iota[dimension=1 dtype=int32 shape=(2, 3, 1100) sharding=None]
    c:bool[2,3,1100] = ge r 1:i32[]
    f:f32[2,3,1100] = iota[dimension=1 dtype=float32 shape=(2, 3, 1100) sharding=None]
    g:f32[2,3,1100] = mul w f
    z:f32[2,3,1100] = broadcast_in_dim[shape=(2, 3, 1100) broadcast_dimensions=()] 0.0:f32[]
    y:f32[2,3,1100] = select_n c z g
    s:f32[] = reduce_sum[axes=(0, 1, 2)] y
  in (h, l, s) })", "one_hot");
  const Linearization lin = linearize_with(program);
  RandomInputs in = random_inputs(program, 19);
  const std::vector<double> labels{0, 1099, 17, 1024, 1023, 512};  // the ends of rows and of a segment
  in.arguments[0].data = labels;
  const std::vector<Tensor> expected = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  const std::vector<std::string> options{"highway", "reference"};
  const StepProgram steps = fused_everywhere(lin, options);
  const std::vector<std::string> fused = fused_steps(steps, Pass::kForward);
  bool one_hot = false;
  size_t iotas = 0;
  for (const std::string& f : fused) {
    one_hot |= f.rfind("highway: iota + broadcast_in_dim + eq + convert_element_type + mul", 0) == 0;
    for (size_t at = f.find("iota"); at != std::string::npos; at = f.find("iota", at + 1)) ++iotas;
  }
  EXPECT_TRUE(one_hot) << "the one-hot's chain is one step with its iota";
  EXPECT_EQ(iotas, 3u) << "each iota is a part of the chain that reads it";
  const std::vector<Tensor> got = fused_everywhere_runner(lin, options, Pass::kForward).run(in.constants, in.arguments).outputs;
  const std::vector<Tensor> unfused =
      OneShotRunner(lin, fused_on(options, BackendOptions::Fusion::kOff), Pass::kForward).run(in.constants, in.arguments).outputs;
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_EQ(unfused.size(), expected.size());
  for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(got[o].data, unfused[o].data) << "output " << o;
  // The one-hot and each row's picked logit are exact in any order; the masked sum is added in
  // Highway's order or the reference's.
  EXPECT_EQ(got[0].data, expected[0].data);
  EXPECT_EQ(got[1].data, expected[1].data);
  expect_outputs_near(got, expected, 1e-5);
  for (size_t row = 0; row < labels.size(); ++row) {
    double ones = 0;
    for (size_t k = 0; k < 1100; ++k) ones += got[0].data[row * 1100 + k];
    EXPECT_EQ(ones, 1.0) << "row " << row;
    EXPECT_EQ(got[0].data[row * 1100 + static_cast<size_t>(labels[row])], 1.0) << "row " << row;
  }
}

// Outputs of 16 MiB and more are streamed past the caches from buffers in L1
// (FusedElementwise::stage_results, and over_chunks_into for the ops that run alone): two results
// of one chain, a bias tiled beside them, and an element count that leaves a partial last vector
// and segment; fused, and each op alone. Every value is one rounding of f32 arithmetic, so the
// expected bits are computed here.
TEST(Fusion, LargeResultsStreamedPastTheCachesKeepTheirBits) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  constexpr size_t kRows = 4099, kCols = 1025;
  static_assert(kRows * kCols * sizeof(float) >= (size_t{16} << 20), "over the size results are streamed from");
  const Program program = parse_program(R"({ lambda ; x:f32[4099,1025] y:f32[4099,1025] b:f32[1025]. let
    bb:f32[1,1025] = reshape[new_sizes=(1, 1025) dimensions=None] b
    m:f32[4099,1025] = mul x y
    a:f32[4099,1025] = add m bb
    r:f32[4099,1025] = max a 0.0:f32[]
  in (m, r) })", "streamed");
  const Linearization lin = linearize_with(program);
  const RandomInputs in = random_inputs(program, 23);
  const std::vector<std::string> backends{"highway", "reference"};
  const std::vector<std::string> fused = fused_steps(fused_everywhere(lin, backends, Pass::kForward), Pass::kForward);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].rfind("highway: mul + add + max", 0), 0u) << fused[0];  // then max's JVP parts
  const std::vector<double>&x = in.arguments[0].data, &y = in.arguments[1].data, &b = in.arguments[2].data;
  for (bool fuse : {true, false}) {
    SCOPED_TRACE(fuse ? "fused" : "each op alone");
    const std::vector<Tensor> got =
        (fuse ? fused_everywhere_runner(lin, backends, Pass::kForward)
              : OneShotRunner(lin, fused_on(backends, BackendOptions::Fusion::kOff), Pass::kForward))
            .run(in.constants, in.arguments)
            .outputs;
    ASSERT_EQ(got.size(), 2u);
    ASSERT_EQ(got[0].data.size(), kRows * kCols);
    ASSERT_EQ(got[1].data.size(), kRows * kCols);
    size_t wrong_products = 0, wrong_results = 0, first_wrong = kRows * kCols;
    for (size_t i = 0; i < kRows * kCols; ++i) {
      const float m = static_cast<float>(x[i]) * static_cast<float>(y[i]);
      const float r = std::max(m + static_cast<float>(b[i % kCols]), 0.0f);
      const bool product_ok = got[0].data[i] == static_cast<double>(m), result_ok = got[1].data[i] == static_cast<double>(r);
      wrong_products += product_ok ? 0 : 1;
      wrong_results += result_ok ? 0 : 1;
      if (!product_ok || !result_ok) first_wrong = std::min(first_wrong, i);
    }
    EXPECT_EQ(wrong_products, 0u) << "first wrong element " << first_wrong;
    EXPECT_EQ(wrong_results, 0u) << "first wrong element " << first_wrong;
  }
}

// A value per row beside the row's elements ([B, S, 1] beside [B, S, D]: a layer norm's mean and
// scale, a softmax's max and sum) is read from its own buffer inside the fused pass, rows of 50
// crossing the segments' ends; the results are the reference's.
TEST(Fusion, AValuePerRowIsReadBesideItsRowInsideTheFusedPass) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[4,30,50] m:f32[4,30,1] s:f32[4,30,1] g:f32[1,1,50]. let
    c:f32[4,30,50] = sub x m
    n:f32[4,30,50] = mul c s
    y:f32[4,30,50] = mul n g
    l:f32[] = reduce_sum[axes=(0, 1, 2)] y
  in (l,) })", "rows");
  const Linearization lin = linearize_with(program);
  const RandomInputs in = random_inputs(program, 5);
  const GradientResult expected = run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  const std::vector<std::string> options{"highway", "reference"};
  const StepProgram steps = fused_everywhere(lin, options);
  const std::vector<std::string> fused = fused_steps(steps, Pass::kForward);
  ASSERT_FALSE(fused.empty());
  EXPECT_EQ(fused[0].rfind("highway: sub + mul + mul", 0), 0u) << fused[0];
  expect_gradient_near(fused_everywhere_runner(lin, options).run(in.constants, in.arguments), expected, 1e-5);
}

// A chain's rows summed or maxed as its segments pass (a softmax's exponentials and their sum, a
// layer norm's sum of squares): one step, with the unfused plan's bits, whole rows per segment and
// per thread's chunk (153600 elements, rows of 60: chunks run in parallel).
TEST(Fusion, AChainsRowsAreReducedInsideItsFusedStep) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[64,40,60] m:f32[64,40]. let
    b:f32[64,40,60] = broadcast_in_dim[shape=(64, 40, 60) broadcast_dimensions=(0, 1)] m
    c:f32[64,40,60] = sub x b
    e:f32[64,40,60] = exp c
    s:f32[64,40] = reduce_sum[axes=(2,)] e
    q:f32[64,40,60] = square x
    u:f32[64,40] = reduce_sum[axes=(2,)] q
    t:f32[64] = reduce_max[axes=(1, 2)] q
  in (e, s, t, u) })", "rows");
  const Linearization lin = linearize_with(program);
  const RandomInputs in = random_inputs(program, 3);
  const std::vector<std::string> fused{"highway", "reference"};
  const StepProgram steps = fused_everywhere(lin, fused);
  const std::vector<std::string> chains = fused_steps(steps, Pass::kForward);
  ASSERT_FALSE(chains.empty());
  // Both sums (beside the JVP's coefficients); not the max over two axes, whose rows of 2400 are
  // not the sums' rows of 60.
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = chains[0].find(what); at != std::string::npos; at = chains[0].find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(chains[0].rfind("highway: broadcast_in_dim + sub + exp + reduce_sum", 0), 0u) << chains[0];
  EXPECT_EQ(count("reduce_sum"), 2u) << chains[0];
  EXPECT_EQ(count("reduce_max"), 0u) << chains[0];
  const std::vector<Tensor> got = fused_everywhere_runner(lin, fused, Pass::kForward).run(in.constants, in.arguments).outputs;
  const std::vector<Tensor> unfused =
      run_forward(lin, in.constants, in.arguments, fused_on({"highway", "reference"}, BackendOptions::Fusion::kOff));
  const std::vector<Tensor> reference = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  ASSERT_EQ(got.size(), 4u);
  for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(got[o].data, unfused[o].data) << "output " << o;
  expect_outputs_near(got, reference, 1e-4);
}

// Rows longer than a segment (a language model's logits over its vocabulary: the softmax's sum of
// exponentials, the picked logit's masked sum) are reduced inside the chain too, a segment at a
// time: rows of 3001 floats (two whole segments and a piece that ends in a partial vector), 48 of
// them, so that chunks of rows run in parallel. Each row's value has the bits of the sum or max
// alone, and is near the reference's.
TEST(Fusion, RowsLongerThanASegmentAreReducedInsideTheChain) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[48,3001] m:f32[48]. let
    b:f32[48,3001] = broadcast_in_dim[shape=(48, 3001) broadcast_dimensions=(0,)] m
    c:f32[48,3001] = sub x b
    e:f32[48,3001] = exp c
    s:f32[48] = reduce_sum[axes=(1,)] e
    q:f32[48,3001] = mul x x
    t:f32[48] = reduce_max[axes=(1,)] q
  in (s, t) })", "long rows");
  const Linearization lin = linearize_with(program);
  const RandomInputs in = random_inputs(program, 29);
  const std::vector<std::string> backends{"highway", "reference"};
  const std::vector<std::string> chains = fused_steps(fused_everywhere(lin, backends, Pass::kForward), Pass::kForward);
  ASSERT_FALSE(chains.empty());
  EXPECT_EQ(chains[0].rfind("highway: broadcast_in_dim + sub + exp + reduce_sum", 0), 0u) << chains[0];
  EXPECT_NE(chains[0].find("reduce_max"), std::string::npos) << chains[0];
  const std::vector<Tensor> got = fused_everywhere_runner(lin, backends, Pass::kForward).run(in.constants, in.arguments).outputs;
  const std::vector<Tensor> alone =
      run_forward(lin, in.constants, in.arguments, fused_on(backends, BackendOptions::Fusion::kOff));
  const std::vector<Tensor> reference = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(alone.size(), 2u);
  for (size_t o = 0; o < got.size(); ++o) EXPECT_EQ(got[o].data, alone[o].data) << "output " << o;
  expect_outputs_near(got, reference, 1e-4);
}

// Two binary parts where the second alone reads the first run as one pass on Highway, the value
// between them in a register: the same bits as the parts alone, whichever side of the second the
// first's value is on (sub and div care), and a mul then an add not contracted into one rounding.
TEST(Fusion, TwoBinaryPartsInOnePassRoundAsTwoPasses) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[8,300] y:f32[8,300] z:f32[8,300]. let
    a:f32[8,300] = mul x y
    b:f32[8,300] = sub z a
    c:f32[8,300] = add x 1.5:f32[]
    d:f32[8,300] = div c y
    e:f32[8,300] = mul b d
    f:f32[8,300] = add e z
  in (f,) })", "pairs");
  const Linearization lin = linearize_with(program);
  const RandomInputs in = random_inputs(program, 9, 0.5, 2.0);
  const std::vector<Tensor> fused =
      fused_everywhere_runner(lin, {"highway", "reference"}, Pass::kForward).run(in.constants, in.arguments).outputs;
  const std::vector<Tensor> unfused =
      run_forward(lin, in.constants, in.arguments, fused_on({"highway", "reference"}, BackendOptions::Fusion::kOff));
  const std::vector<Tensor> reference = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].data, unfused[0].data);
  EXPECT_EQ(fused[0].data, reference[0].data) << "correctly rounded steps: the reference's bits too";
}

// A softmax cross-entropy's backward: the logits' cotangent is the sum of two terms, the exp's
// (the sum's cotangent spread over each row, times exp) and the one-hot's (the picked logit's
// cotangent spread, times the one-hot). Neither term reads the other, so a chain from one would
// leave the other written out and read back; as a tree both terms and their sum are one pass.
TEST(Fusion, TwoTermsOfACotangentAndTheirSumAreOneHighwayPass) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; y:f32[2,3,700] t:i32[2,3]. let
    z:f32[2,3] = reduce_max[axes=(2,)] y
    m:f32[2,3] = stop_gradient z
    b:f32[2,3,1] = broadcast_in_dim[shape=(2, 3, 1) broadcast_dimensions=(0, 1)] m
    c:f32[2,3,700] = sub y b
    e:f32[2,3,700] = exp c
    s:f32[2,3] = reduce_sum[axes=(2,)] e
    l:f32[2,3] = log s
    i:i32[2,3,700] = iota[dimension=2 dtype=int32 shape=(2, 3, 700)]
    k:i32[2,3,700] = broadcast_in_dim[shape=(2, 3, 700) broadcast_dimensions=(0, 1)] t
    h:bool[2,3,700] = eq i k
    o:f32[2,3,700] = convert_element_type[new_dtype=float32] h
    p:f32[2,3,700] = mul c o
    q:f32[2,3] = reduce_sum[axes=(2,)] p
    n:f32[2,3] = sub l q
    r:f32[] = reduce_sum[axes=(0, 1)] n
  in (r,) })", "cross_entropy");
  const Linearization lin = linearize_with(program);
  RandomInputs in = random_inputs(program, 23);
  in.arguments[1].data = {0, 699, 5, 350, 1, 698};
  const std::vector<std::string> backends{"highway", "reference"};
  const StepProgram steps = fused_everywhere(lin, backends);
  const Step* tree = nullptr;
  for (const Step& step : steps.steps()) {
    if (step.pass != Pass::kBackward || step.fused.empty()) continue;
    size_t muls = 0, adds = 0;
    for (int e : step.fused) {
      muls += lin.graph.eqns[static_cast<size_t>(e)].prim == Prim::kMul;
      adds += lin.graph.eqns[static_cast<size_t>(e)].prim == Prim::kAddAny ||
              lin.graph.eqns[static_cast<size_t>(e)].prim == Prim::kAdd;
    }
    if (muls == 2 && adds == 1) tree = &step;
  }
  ASSERT_NE(tree, nullptr) << ::testing::PrintToString(fused_steps(steps, Pass::kBackward));
  EXPECT_EQ(tree->kernel->backend(), "highway");
  // The two terms are read only by their sum: no buffer holds either.
  const std::set<ValueId> held = buffered(steps);
  for (int e : tree->fused) {
    const FlatEquation& eqn = lin.graph.eqns[static_cast<size_t>(e)];
    if (eqn.prim == Prim::kMul) {
      EXPECT_EQ(held.count(eqn.outputs[0]), 0u);
    }
  }
  ASSERT_EQ(tree->outputs.size(), 1u);
  OneShotRunner fused = fused_everywhere_runner(lin, backends);
  OneShotRunner unfused(lin, fused_on(backends, BackendOptions::Fusion::kOff));
  const GradientResult got = fused.run(in.constants, in.arguments);
  expect_same_bits(got, unfused.run(in.constants, in.arguments));
  const GradientResult reference =
      run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  ASSERT_TRUE(got.gradients[0] && reference.gradients[0]);  // y's; the labels have none
  expect_outputs_near({*got.gradients[0]}, {*reference.gradients[0]}, 1e-5);
  EXPECT_EQ(fused.measured_peak(MemorySpace::kDevice), fused.layout().arena(MemorySpace::kDevice));
}

// A tanh MLP with a checkpoint per layer under nothing_saveable (the sweep's mlp): each layer's
// input is saved, and the backward pass recomputes that same value in the layer before. The next
// layer's weight gradient reads the saved one earlier in the pass; a tree that pulled the
// recompute in with it would read the value before computing it, so the recompute stays where it
// is, and the fused plan gives the unfused bits. (64 wide, as the sweep's: at 16 the fusions form
// otherwise and never meet this.)
TEST(Fusion, ARecomputeOfAValueReadEarlierInThePassIsNotMovedIntoAFusion) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  ModelBuilder model;
  for (int i = 0; i < 5; ++i) model.checkpoint("nothing_saveable", [](ModelBuilder& l) { l.dense(64).tanh(); });
  model.checkpoint("nothing_saveable", [](ModelBuilder& l) { l.dense(64); });
  const Model mlp = model.build(64, 64, 3, Loss::kSum);
  const Linearization lin = linearize_with(mlp.program);
  const RandomInputs in = random_inputs(mlp.program, 29);
  for (const std::vector<std::string>& backends : {std::vector<std::string>{"highway", "reference"},
                                                    std::vector<std::string>{"reference"}}) {
    SCOPED_TRACE(backends.front());
    OneShotRunner fused = fused_everywhere_runner(lin, backends);
    EXPECT_EQ(fused.program().fused_steps() > 0, backends.front() == "highway");
    OneShotRunner unfused(lin, fused_on(backends, BackendOptions::Fusion::kOff));
    expect_same_bits(fused.run(in.constants, in.arguments), unfused.run(in.constants, in.arguments));
  }
}

// A tied embedding (GPT-2's wte: gathered at the input, the head's weight at the output): its
// cotangent is the head's plus the gather's transpose, a scatter-add of rows into zeros. The
// zeros, the scatter and the sum are one Highway step that writes the sum alone; its bits are the
// unfused plan's, with token 3 three times so that a row sums several updates in order. (The head
// reads the weight transposed, so its cotangent comes from a transpose: from the product itself,
// as in a step of two ops, the product's fusion would take the sum first; in GPT-2's step the
// head's product is a whole backward pass away.)
TEST(Fusion, ATiedEmbeddingsTwoCotangentsAreSummedInOneHighwayStep) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; w:f32[10,4] ids:i32[7]. let
    i:i32[7,1] = broadcast_in_dim[shape=(7, 1) broadcast_dimensions=(0,)] ids
    e:f32[7,4] = gather[dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=()) slice_sizes=(1, 4) mode=GatherScatterMode.FILL_OR_DROP fill_value=None] w i
    t:f32[7,4] = tanh e
    v:f32[4,10] = transpose[permutation=(1, 0)] w
    l:f32[7,10] = dot_general[dimension_numbers=(([1], [0]), ([], []))] t v
    q:f32[7,10] = mul l l
    s:f32[] = reduce_sum[axes=(0, 1)] q
  in (s,) })", "tied");
  const Linearization lin = linearize_with(program);
  RandomInputs in = random_inputs(program, 31);
  in.arguments[1].data = {3, 3, 0, 9, 3, 7, 1};
  const GradientResult reference =
      run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  for (const std::vector<std::string>& backends : {std::vector<std::string>{"highway", "reference"},
                                                    std::vector<std::string>{"onednn", "highway", "reference"}}) {
    if (!backend_installed(backends.front())) continue;
    SCOPED_TRACE(backends.front());
    const std::vector<std::string> backward = fused_steps(fused_everywhere(lin, backends), Pass::kBackward);
    EXPECT_EQ(std::count(backward.begin(), backward.end(), "highway: broadcast_in_dim + scatter-add + add"), 1)
        << ::testing::PrintToString(backward);
    const GradientResult got = fused_everywhere_runner(lin, backends).run(in.constants, in.arguments);
    expect_same_bits(got, OneShotRunner(lin, fused_on(backends, BackendOptions::Fusion::kOff)).run(in.constants, in.arguments));
    ASSERT_TRUE(got.gradients[0] && reference.gradients[0]);
    expect_outputs_near({*got.gradients[0]}, {*reference.gradients[0]}, 1e-5);
  }
}

// The fused step's arithmetic, worked out here: a + z where no update reaches (-0.0 + 0.0 is +0.0),
// and a + (((z + u0) + u1) + u3) for row 2, whose updates cancel only in that order (1e8 + 1 is
// 1e8 in f32), an index past the table dropped (FILL_OR_DROP).
TEST(Fusion, AScatterSumAddsEachRowsUpdatesInOrderThenTheAddend) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(R"({ lambda ; a:f32[5,3] ids:i32[5,1] u:f32[5,3]. let
    z:f32[5,3] = broadcast_in_dim[shape=(5, 3) broadcast_dimensions=()] 0.0:f32[]
    s:f32[5,3] = scatter-add[dimension_numbers=ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=()) mode=GatherScatterMode.FILL_OR_DROP] z ids u
    y:f32[5,3] = add a s
  in (y,) })", "scatter_sum");
  const Linearization lin = linearize_with(program);
  RandomInputs in = random_inputs(program, 37);
  in.arguments[1].data = {2, 2, 4, 2, 9};
  std::vector<double>& a = in.arguments[0].data;
  std::vector<double>& u = in.arguments[2].data;
  a[0] = -0.0;
  for (size_t j = 0; j < 3; ++j) u[0 * 3 + j] = 1e8, u[1 * 3 + j] = 1.0, u[3 * 3 + j] = -1e8;
  const StepProgram steps = fused_everywhere(lin, {"highway", "reference"}, Pass::kForward);
  ASSERT_EQ(fused_steps(steps, Pass::kForward), (std::vector<std::string>{"highway: broadcast_in_dim + scatter-add + add"}));
  const std::vector<Tensor> got =
      fused_everywhere_runner(lin, {"highway", "reference"}, Pass::kForward).run(in.constants, in.arguments).outputs;
  ASSERT_EQ(got.size(), 1u);
  for (size_t r = 0; r < 5; ++r)
    for (size_t j = 0; j < 3; ++j) {
      const size_t i = r * 3 + j;
      float sum = 0.0f;
      if (r == 2) sum = ((sum + static_cast<float>(u[0 * 3 + j])) + static_cast<float>(u[1 * 3 + j])) + static_cast<float>(u[3 * 3 + j]);
      if (r == 4) sum += static_cast<float>(u[2 * 3 + j]);
      const float expected = static_cast<float>(a[i]) + sum;
      EXPECT_EQ(got[0].data[i], static_cast<double>(expected)) << "row " << r << " col " << j;
      EXPECT_EQ(std::signbit(got[0].data[i]), std::signbit(expected)) << "row " << r << " col " << j;
    }
}

// A ResNet's relu chains fused in both passes raise its peak a little (each fused step holds its
// operands and its results at once); fused in one pass they need not. The default then fuses the
// one pass rather than nothing, still with no higher a peak than unfused.
TEST(Fusion, WhereFusingBothPassesRaisesThePeakOnePassStillFuses) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  ModelBuilder model;
  model.checkpoint("everything_saveable", [](ModelBuilder& b) { b.resnet_block(16); });
  model.checkpoint("everything_saveable", [](ModelBuilder& b) { b.resnet_block(32, 2); });
  model.global_average_pool().dense(10);
  const Model cnn = model.build(Shape{8, 16, 16, 3});
  const Linearization lin = linearize_with(cnn.program);
  auto arena = [](const StepProgram& p) {
    return p.layout().arena(MemorySpace::kDevice) + p.layout().arena(MemorySpace::kPinnedHost);
  };
  auto plan = [&](BackendOptions::Fusion fusion) {
    return build_step_program(lin, fused_on({"highway", "reference"}, fusion), Pass::kBackward, InputMode::kLoadedEachRun);
  };
  const StepProgram chosen_plan = plan(BackendOptions::Fusion::kUnlessPeakRises);
  const size_t fused_steps = chosen_plan.fused_steps();
  const int64_t unfused = arena(plan(BackendOptions::Fusion::kOff)), chosen = arena(chosen_plan);
  const int64_t everywhere = arena(fused_everywhere(lin, {"highway", "reference"}));
  ASSERT_GT(everywhere, unfused) << "the case this test is about: fusing both passes raises this CNN's peak";
  EXPECT_LE(chosen, unfused);
  EXPECT_GT(fused_steps, 0u);
  const FusionChoice& choice = chosen_plan.fusion();
  EXPECT_TRUE(!choice.forward || !choice.backward || !choice.held_apart.empty())
      << "not fused everywhere: fusions held apart, or one pass alone";
}

// The sweep's gpt-small under dots_with_no_batch_dims_saveable: fused everywhere, its plan's peak
// is above the unfused one's, and fusing its backward pass (the recompute) at all raised it too.
// With the fusions live at the peak held apart, the rest fuse in both passes, at the unfused
// plan's live peak and no higher an arena.
TEST(Fusion, ABlocksRecomputeFusesWithTheFusionsAtThePeakHeldApart) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  GptConfig config;
  config.vocab = 128;
  config.sequence = 32;
  config.model = 64;
  config.mlp = 256;
  config.dropout = 0.1;
  const Model gpt = build_gpt(config, "dots_with_no_batch_dims_saveable");
  const Linearization lin = linearize_with(gpt.program);
  auto program = [&](BackendOptions::Fusion fusion) {
    return build_step_program(lin, fused_on({"highway", "reference"}, fusion), Pass::kBackward, InputMode::kLoadedEachRun);
  };
  auto arena = [](const StepProgram& p) {
    return p.layout().arena(MemorySpace::kDevice) + p.layout().arena(MemorySpace::kPinnedHost);
  };
  const StepProgram unfused = program(BackendOptions::Fusion::kOff), chosen = program(BackendOptions::Fusion::kUnlessPeakRises);
  EXPECT_LE(arena(chosen), arena(unfused));
  EXPECT_EQ(chosen.layout().live_peak(MemorySpace::kDevice), unfused.layout().live_peak(MemorySpace::kDevice));
  EXPECT_FALSE(fused_steps(chosen, Pass::kBackward).empty());
  EXPECT_FALSE(fused_steps(chosen, Pass::kForward).empty());
  // The choice the program reports is the one it was built with: built again from it, the same plan.
  EXPECT_FALSE(chosen.fusion().held_apart.empty());
  const StepProgram again = build_step_program(lin, fused_on({"highway", "reference"}, BackendOptions::Fusion::kUnlessPeakRises),
                                               Pass::kBackward, InputMode::kLoadedEachRun, chosen.fusion());
  EXPECT_EQ(fused_steps(again, Pass::kForward), fused_steps(chosen, Pass::kForward));
  EXPECT_EQ(fused_steps(again, Pass::kBackward), fused_steps(chosen, Pass::kBackward));
  EXPECT_EQ(arena(again), arena(chosen));
}

TEST(Fusion, ALayerNormsPerRowSpreadsJoinTheChainsThatReadThem) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  // Flax's LayerNorm over D = 64: the mean and the scale, one value per row, are spread back over
  // [B, S, D] by broadcast_in_dim. Each spread goes into the chain that reads it (the subtraction,
  // then the scaling and the affine), so no [B, S, D] buffer of repeated values is written; so does
  // a softmax's max over rows of 8.
  const Program program = parse_program(R"({ lambda ; x:f32[2,3,64] g:f32[64] b:f32[64] y:f32[4,8]. let
    s:f32[2,3] = reduce_sum[axes=(2,)] x
    m:f32[2,3] = div s 64.0:f32[]
    mb:f32[2,3,1] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3, 1) sharding=None] m
    ms:f32[2,3,64] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(2, 3, 64) sharding=None] mb
    c:f32[2,3,64] = sub x ms
    q:f32[2,3,64] = square c
    v:f32[2,3] = reduce_sum[axes=(2,)] q
    w:f32[2,3] = div v 64.0:f32[]
    e:f32[2,3] = add w 1e-06:f32[]
    r:f32[2,3] = rsqrt e
    rs:f32[2,3,64] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3, 64) sharding=None] r
    n:f32[2,3,64] = mul c rs
    gb:f32[1,1,64] = reshape[dimensions=None new_sizes=(1, 1, 64) sharding=None] g
    gs:f32[2,3,64] = mul n gb
    bb:f32[1,1,64] = reshape[dimensions=None new_sizes=(1, 1, 64) sharding=None] b
    o:f32[2,3,64] = add gs bb
    t:f32[2,3,64] = tanh o
    l:f32[] = reduce_sum[axes=(0, 1, 2)] t
    u:f32[4] = reduce_max[axes=(1,)] y
    ub:f32[4,8] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 8) sharding=None] u
    z:f32[4,8] = sub y ub
    k:f32[4,8] = exp z
    h:f32[] = reduce_sum[axes=(0, 1)] k
    lh:f32[] = add l h
  in (lh,) })", "layer_norm");
  const Linearization lin = linearize_with(program);
  const StepProgram steps = fused_everywhere(lin, {"highway", "reference"});
  // (The forward pass also computes what the backward keeps of square's and tanh's JVPs: the mul
  // and sub that end the first and third chains.)
  const std::vector<std::string> forward = fused_steps(steps, Pass::kForward);
  auto has = [&](const std::string& chain) {
    return std::any_of(forward.begin(), forward.end(), [&](const std::string& f) { return f.rfind(chain, 0) == 0; });
  };
  auto contains = [&](const std::string& chain) {
    return std::any_of(forward.begin(), forward.end(), [&](const std::string& f) { return f.find(chain) != std::string::npos; });
  };
  EXPECT_TRUE(has("highway: broadcast_in_dim + sub + square")) << ::testing::PrintToString(forward);
  EXPECT_TRUE(has("highway: broadcast_in_dim + mul + mul + add + tanh")) << ::testing::PrintToString(forward);
  // The softmax's spread max joins its sub, in the chain that also counts the maxima for
  // reduce_max's JVP (eq + convert_element_type + reduce_sum, before it in the pass).
  EXPECT_TRUE(contains(" broadcast_in_dim + sub + exp")) << ::testing::PrintToString(forward);
  const RandomInputs in = random_inputs(program, 7);
  OneShotRunner fused = fused_everywhere_runner(lin, {"highway", "reference"});
  OneShotRunner unfused(lin, fused_on({"highway", "reference"}, BackendOptions::Fusion::kOff));
  expect_same_bits(fused.run(in.constants, in.arguments), unfused.run(in.constants, in.arguments));
}

TEST(Fusion, SomeCasesReallyFuse) {
  // The test above is only worth something if fused plans differ from unfused ones.
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  size_t fusing = 0;
  for (const ResidualCase& c : residual_cases()) {
    const Linearization lin = linearize_with(load_program(c.program_path));
    fusing += fused_everywhere(lin, {"highway", "reference"})
                          .fused_steps() > 0
                  ? 1
                  : 0;
  }
  EXPECT_GE(fusing, residual_cases().size() / 3);
}

// Every gradient of `a` has `b`'s bits.
void expect_same_gradient_bits(const GradientResult& a, const GradientResult& b) {
  ASSERT_EQ(a.gradients.size(), b.gradients.size());
  for (size_t i = 0; i < a.gradients.size(); ++i) {
    if (!a.gradients[i]) continue;
    ASSERT_TRUE(b.gradients[i]) << i;
    for (size_t j = 0; j < a.gradients[i]->data.size(); ++j) EXPECT_EQ(a.gradients[i]->data[j], b.gradients[i]->data[j]);
  }
}

TEST(Fusion, OneDnnPostOpsGiveTheUnfusedBits) {
  // Every policy's gradients are the baseline's bits only if a fusion changes no value's bits: a
  // kept product ends a fusion that a recomputed one makes.
  if (!backend_installed("onednn")) GTEST_SKIP() << "onednn is not built";
  const Program program = parse_program(kDenseLayers, "dense");
  const RandomInputs in = random_inputs(program, 3, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  OneShotRunner fused = fused_everywhere_runner(lin, {"onednn", "highway", "reference"});
  OneShotRunner unfused(lin, fused_on({"onednn", "highway", "reference"}, BackendOptions::Fusion::kOff));
  ASSERT_GT(fused.program().fused_steps(), 0u);
  expect_same_gradient_bits(fused.run(in.constants, in.arguments), unfused.run(in.constants, in.arguments));
}

// Attention's heads put back in [B, S, H, Dh] (p v in the forward pass; q's and k's gradients,
// which dot_general's transpose rule permutes into the operands' dims): oneDNN's matmul writes the
// product in the transposed layout. The same kernel's sums, so the unfused plan's bits, and every
// policy's gradients the same bits (a policy that keeps the product leaves its transpose apart).
TEST(Fusion, OneDnnWritesAProductTransposedWithTheUnfusedBits) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  GptConfig config;
  config.vocab = 64;
  config.sequence = 32;
  config.model = 64;
  config.heads = 4;
  config.mlp = 128;
  const std::vector<std::string> backends{"onednn", "highway", "reference"};
  std::optional<GradientResult> baseline;
  for (const char* policy : {"everything_saveable", "nothing_saveable", "dots_saveable"}) {
    SCOPED_TRACE(policy);
    const Model gpt = build_gpt(config, policy);
    const Linearization lin = linearize_with(gpt.program);
    const StepProgram steps = fused_everywhere(lin, backends);
    size_t transposed = 0;
    for (Pass pass : {Pass::kForward, Pass::kBackward})
      for (const std::string& f : fused_steps(steps, pass)) transposed += f == "onednn: dot_general + transpose";
    EXPECT_GE(transposed, 2u) << "q's and k's gradients at least";
    OneShotRunner fused = fused_everywhere_runner(lin, backends);
    const GradientResult got = fused.run({}, gpt.arguments);
    expect_same_bits(got, OneShotRunner(lin, fused_on(backends, BackendOptions::Fusion::kOff)).run({}, gpt.arguments));
    if (baseline) expect_same_gradient_bits(got, *baseline);
    else baseline = got;
  }
}

// From 768 rows oneDNN reads a product's weights from a copy in the layout its matmul prefers (its
// blocked ones on AVX-512), in a plain product and in one with its bias add fused into it:
// the gradients are still the reference's, and fused and unfused give the same bits.
TEST(Fusion, OneDnnWeightsInTheirPreferredLayoutGiveTheReferenceGradients) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[1024,48] b1:f32[40] w1:f32[48,40] w2:f32[40,24]. let
    a:f32[1024,40] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
    c:f32[1,40] = reshape[new_sizes=(1, 40) dimensions=None] b1
    d:f32[1024,40] = add a c
    e:f32[1024,40] = tanh d
    f:f32[1024,24] = dot_general[dimension_numbers=(([1], [0]), ([], []))] e w2
    l:f32[] = reduce_sum[axes=(0, 1)] f
  in (l,) })", "dense");
  const RandomInputs in = random_inputs(program, 11, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  const GradientResult expected = run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  OneShotRunner fused = fused_everywhere_runner(lin, {"onednn", "highway", "reference"});
  OneShotRunner unfused(lin, fused_on({"onednn", "highway", "reference"}, BackendOptions::Fusion::kOff));
  const std::vector<std::string> steps = fused_steps(fused.program(), Pass::kForward);
  ASSERT_NE(std::find(steps.begin(), steps.end(), "onednn: dot_general + add"), steps.end()) << ::testing::PrintToString(steps);
  const GradientResult a = fused.run(in.constants, in.arguments), b = unfused.run(in.constants, in.arguments);
  expect_gradient_near(a, expected, 1e-5);
  expect_gradient_near(b, expected, 1e-5);
  expect_same_gradient_bits(a, b);
}

// A product whose weights are over the 32 MiB oneDNN's copy takes runs on its sgemm
// (onednn_products.cpp); fused with its bias and a mul, those run as one binary add with the mul as
// its post-op, in place on the product: fused and unfused give the same bits, near the
// reference's. Where the matmul would be brgemm (AVX-512), it would ask for a scratchpad; the
// sgemm and its add ask for none.
TEST(Fusion, OneDnnsLargeProductOnSgemmKeepsItsBiasAndPostOpsFused) {
  if (!backend_installed("onednn") || !backend_installed("highway")) GTEST_SKIP() << "onednn or highway is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[6,2048] b1:f32[4097] w1:f32[2048,4097] s:f32[6,4097]. let
    a:f32[6,4097] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
    c:f32[1,4097] = reshape[new_sizes=(1, 4097) dimensions=None] b1
    d:f32[6,4097] = add a c
    f:f32[6,4097] = mul d s
  in (f,) })", "large_dense");
  const RandomInputs in = random_inputs(program, 13, -1.0, 1.0);
  LinearizeOptions options;
  options.policies = &test_policies();
  options.differentiate = {0, 1, 2};  // not s: then the mul's JVP keeps s, and d stays inside the fusion
  const Linearization lin = linearize(program, options);
  const std::vector<std::string> list{"onednn", "highway", "reference"};
  OneShotRunner fused = fused_everywhere_runner(lin, list, Pass::kForward);
  OneShotRunner unfused(lin, fused_on(list, BackendOptions::Fusion::kOff), Pass::kForward);
  const Step* step = nullptr;
  for (const Step& s : fused.program().steps())
    if (s.fused.size() >= 2 && s.kernel && s.kernel->backend() == "onednn") step = &s;
  ASSERT_NE(step, nullptr) << ::testing::PrintToString(fused_steps(fused.program(), Pass::kForward));
  EXPECT_EQ(step->fused.size(), 3u) << ::testing::PrintToString(fused_steps(fused.program(), Pass::kForward));
  if (__builtin_cpu_supports("avx512f") && !std::getenv("ONEDNN_MAX_CPU_ISA")) {
    EXPECT_EQ(step->kernel->workspace_bytes(), 0u);
  }
  const std::vector<Tensor> a = fused.run(in.constants, in.arguments).outputs;
  const std::vector<Tensor> b = unfused.run(in.constants, in.arguments).outputs;
  const std::vector<Tensor> expected = run_forward(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].data, b[0].data);
  expect_outputs_near(a, expected, 1e-4);

  // With no bias to carry them, the post-ops are not fused (the matmul would give the product other
  // bits than sgemm alone): the same bits again.
  const Program no_bias = parse_program(R"({ lambda ; x:f32[6,2048] w1:f32[2048,4097] s:f32[6,4097]. let
    a:f32[6,4097] = dot_general[dimension_numbers=(([1], [0]), ([], []))] x w1
    f:f32[6,4097] = mul a s
  in (f,) })", "large_product");
  const RandomInputs in2 = random_inputs(no_bias, 17, -1.0, 1.0);
  options.differentiate = {0, 1};
  const Linearization lin2 = linearize(no_bias, options);
  OneShotRunner fused2 = fused_everywhere_runner(lin2, list, Pass::kForward);
  for (const std::string& f : fused_steps(fused2.program(), Pass::kForward)) EXPECT_EQ(f.rfind("onednn:", 0), std::string::npos) << f;
  EXPECT_EQ(fused2.run(in2.constants, in2.arguments).outputs[0].data,
            OneShotRunner(lin2, fused_on(list, BackendOptions::Fusion::kOff), Pass::kForward).run(in2.constants, in2.arguments).outputs[0].data);
}

// Elementwise chains that oneDNN runs part by part fuse on oneDNN too, led by a binary op with the
// rest as its post-ops: a log-softmax's subtraction of the row max (a [4, 6, 1] operand broadcast)
// with its exp, a mul of two whole operands with a row's add after it, and a layer norm's scale and
// shift by rows of 300 (each chain's dims collapsed to [24, 300] for all its operands, which oneDNN
// 2.6 jits; as three dims, it runs a broadcast post-op with its reference code). Fused and unfused give the same bits,
// gradients included, near the reference backend's.
TEST(Fusion, OneDnnRunsAChainLedByABinaryOpAsOnePass) {
  if (!backend_installed("onednn")) GTEST_SKIP() << "onednn is not built";
  const Program program = parse_program(R"({ lambda ; x:f32[4,6,300] c:f32[4,6,300] d:f32[4,6,300] h:f32[1,1,300] p:f32[4,6,300] g:f32[1,1,300] b:f32[1,1,300]. let
    m:f32[4,6] = reduce_max[axes=(2,)] x
    ms:f32[4,6] = stop_gradient m
    mb:f32[4,6,1] = broadcast_in_dim[shape=(4, 6, 1) broadcast_dimensions=(0, 1)] ms
    s:f32[4,6,300] = sub x mb
    e:f32[4,6,300] = exp s
    n:f32[4,6,300] = mul c e
    y:f32[4,6,300] = mul n d
    z:f32[4,6,300] = add y h
    q:f32[4,6,300] = mul p g
    r:f32[4,6,300] = add q b
    t:f32[4,6,300] = add z r
    l:f32[] = reduce_sum[axes=(0, 1, 2)] t
  in (l,) })", "binary_chains");
  const RandomInputs in = random_inputs(program, 23, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  const std::vector<std::string> list{"onednn", "reference"};
  OneShotRunner fused = fused_everywhere_runner(lin, list);
  OneShotRunner unfused(lin, fused_on(list, BackendOptions::Fusion::kOff));
  const std::vector<std::string> forward = fused_steps(fused.program(), Pass::kForward);
  auto has = [&](const std::string& chain) { return std::find(forward.begin(), forward.end(), chain) != forward.end(); };
  EXPECT_TRUE(has("onednn: sub + exp")) << ::testing::PrintToString(forward);
  EXPECT_TRUE(has("onednn: mul + add")) << ::testing::PrintToString(forward);
  // The scale, the shift and the sum with z after them: rows and a whole operand in one pass.
  EXPECT_TRUE(has("onednn: mul + add + add")) << ::testing::PrintToString(forward);
  const GradientResult a = fused.run(in.constants, in.arguments), b = unfused.run(in.constants, in.arguments);
  expect_same_gradient_bits(a, b);
  expect_outputs_near(a.outputs, b.outputs, 0);
  expect_gradient_near(a, run_gradient(lin, in.constants, in.arguments, BackendOptions{{"reference"}, &default_plugins()}), 1e-5);
}

TEST(Fusion, TrainingStepsFusedAndUnfusedStayBitForBitTogether) {
  if (!backend_installed("highway")) GTEST_SKIP() << "highway is not built";
  const Program program = parse_program(kDenseLayers, "dense");
  const RandomInputs in = random_inputs(program, 9, -1.0, 1.0);
  const Linearization lin = linearize_with(program);
  TrainingStep fused(lin, fused_on({"highway", "reference"}, BackendOptions::Fusion::kUnlessPeakRises), {1, 2, 3, 4}, 0.05,
                     in.arguments, in.constants);
  TrainingStep unfused(lin, fused_on({"highway", "reference"}, BackendOptions::Fusion::kOff), {1, 2, 3, 4}, 0.05,
                       in.arguments, in.constants);
  ASSERT_GT(fused.runner().program().fused_steps(), 0u);
  for (int step = 0; step < 3; ++step) EXPECT_EQ(fused.run(), unfused.run()) << "step " << step;
  for (size_t a = 1; a <= 4; ++a) EXPECT_EQ(fused.argument(a).data, unfused.argument(a).data) << "argument " << a;
}

}  // namespace
}  // namespace rematkit::testing
