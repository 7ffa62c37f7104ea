// Step programs on a mesh: one executor and arena per device, collectives through the simulated
// mesh's transport. The data-parallel, FSDP and tensor-parallel steps give the whole model's
// gradients, the same bits as the reference interpreter's simulated mesh on the reference
// backend; every device's arena reaches exactly the per-device peak its plan predicts; each
// collective gives each device what parallel.py defines (the values worked out by hand for the
// interpreter, met by another engine); and what a step on a mesh cannot run is refused.
#include <gtest/gtest.h>

#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/autodiff/gradient.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/runtime/training_step.hpp"
#include "support/sharded_steps.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

Linearization placed(const Program& program) {
  Linearization lin = linearize_with(program);
  if (!lin.graph.mesh) ADD_FAILURE() << "the program runs on no mesh";
  else place_on_mesh(lin, *lin.graph.mesh);
  return lin;
}

BackendOptions reference_backend() { return BackendOptions{{"reference"}, &default_plugins()}; }

struct MeshCase {
  const char* name;
  const char* program;
  const char* policy;
};

const MeshCase kCases[] = {
    {"fsdp_nothing_saveable", kFsdpStep, "nothing_saveable"},
    {"fsdp_dots_saveable", kFsdpStep, "dots_saveable"},
    {"fsdp_everything_saveable", kFsdpStep, "everything_saveable"},
    {"data_parallel_nothing_saveable", kDataParallelStep, "nothing_saveable"},
    {"data_parallel_dots_saveable", kDataParallelStep, "dots_saveable"},
    {"tensor_parallel_nothing_saveable", kTensorParallelStep, "nothing_saveable"},
    {"tensor_parallel_dots_saveable", kTensorParallelStep, "dots_saveable"},
};

class MeshStepTest : public ::testing::TestWithParam<MeshCase> {};

TEST_P(MeshStepTest, GradientsAreTheWholeModelsAndPeaksThePlans) {
  const MeshCase& c = GetParam();
  const Program sharded = parse_program(with_policy(c.program, c.policy), c.name);
  const Linearization lin = placed(sharded);
  ASSERT_TRUE(lin.graph.mesh.has_value());
  const Program whole = parse_program(kWholeModel, "whole");
  const RandomInputs in = random_inputs(whole, 7);

  const MeshRun run = run_on_simulated_devices(lin, *lin.graph.mesh, reference_backend(), in.constants, in.arguments);
  ASSERT_EQ(run.measured_peaks.size(), static_cast<size_t>(lin.graph.mesh->num_devices()));
  EXPECT_GT(run.predicted_peak, 0);
  for (size_t d = 0; d < run.measured_peaks.size(); ++d)
    EXPECT_EQ(run.measured_peaks[d], run.predicted_peak) << "device " << d;

  // The reference interpreter runs every device's whole step on its own simulated mesh: the
  // reference backend's kernels and the same collectives give the same bits.
  const GradientResult interpreted =
      interpret_gradient(linearize_with(sharded), in.constants, in.arguments, Arithmetic::kFloat32);
  ASSERT_EQ(run.result.outputs.size(), 1u);
  EXPECT_EQ(run.result.outputs[0].data, interpreted.outputs[0].data);
  const GradientResult want = interpret_gradient(linearize_with(whole), in.constants, in.arguments, Arithmetic::kFloat64);
  EXPECT_NEAR(run.result.outputs[0].data[0], want.outputs[0].data[0], 1e-5);
  for (size_t a = 0; a < 3; ++a) {
    ASSERT_TRUE(run.result.gradients[a] && interpreted.gradients[a] && want.gradients[a]) << "argument " << a;
    EXPECT_EQ(run.result.gradients[a]->type, want.gradients[a]->type);
    EXPECT_EQ(run.result.gradients[a]->data, interpreted.gradients[a]->data) << "argument " << a;
    for (size_t i = 0; i < want.gradients[a]->data.size(); ++i)
      EXPECT_NEAR(run.result.gradients[a]->data[i], want.gradients[a]->data[i], 1e-5) << "argument " << a << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Steps, MeshStepTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// One device holds a quarter of FSDP's x and half of each weight: its arena is smaller than the
// whole model's on one device.
TEST(MeshStepRunner, ADevicesPeakIsBelowTheWholeModels) {
  const Linearization lin = placed(parse_program(with_policy(kFsdpStep, "nothing_saveable"), "fsdp"));
  const Linearization whole = linearize_with(parse_program(kWholeModel, "whole"), "nothing_saveable");
  const MeshStepRunner device(lin, *lin.graph.mesh, reference_backend());
  const OneShotRunner one(whole, reference_backend());
  EXPECT_LT(device.layout().arena(MemorySpace::kDevice), one.layout().arena(MemorySpace::kDevice));
}

TEST(MeshStepRunner, EachDeviceGetsWhatParallelPyDefines) {
  const Linearization lin = placed(parse_program(kEveryCollective, "collectives"));
  const MeshRun run = run_on_simulated_devices(lin, *lin.graph.mesh, reference_backend(), {}, {iota({8}), iota({4, 4})});
  expect_what_parallel_py_defines(run.result.outputs);
  for (int64_t peak : run.measured_peaks) EXPECT_EQ(peak, run.predicted_peak);
}

TEST(MeshStepRunner, FastestBackendsAgreeWithTheReference) {
  const Linearization lin = placed(parse_program(with_policy(kFsdpStep, "dots_saveable"), "fsdp"));
  const RandomInputs in = random_inputs(parse_program(kWholeModel, "whole"), 3);
  const MeshRun reference = run_on_simulated_devices(lin, *lin.graph.mesh, reference_backend(), in.constants, in.arguments);
  const MeshRun fastest = run_on_simulated_devices(lin, *lin.graph.mesh, BackendOptions{default_plugins().fastest_backends(), &default_plugins()},
                                                   in.constants, in.arguments);
  for (size_t a = 0; a < 3; ++a)
    for (size_t i = 0; i < reference.result.gradients[a]->data.size(); ++i)
      EXPECT_NEAR(fastest.result.gradients[a]->data[i], reference.result.gradients[a]->data[i], 1e-5);
}

// SGD on a mesh, each device updating its own blocks, follows the whole model's path: the same
// loss after every step.
TEST(MeshStepRunner, TrainingStepsFollowTheWholeModels) {
  const Linearization lin = placed(parse_program(with_policy(kFsdpStep, "nothing_saveable"), "fsdp"));
  const Linearization whole = linearize_with(parse_program(kWholeModel, "whole"));
  const RandomInputs in = random_inputs(parse_program(kWholeModel, "whole"), 9);
  TrainingStep on_mesh(lin, reference_backend(), {1, 2}, 0.1, in.arguments);
  TrainingStep alone(whole, reference_backend(), {1, 2}, 0.1, in.arguments);
  EXPECT_EQ(on_mesh.devices(), 4);
  for (int step = 0; step < 3; ++step) EXPECT_NEAR(on_mesh.run(), alone.run(), 1e-5) << "step " << step;
  EXPECT_EQ(on_mesh.measured_peak(), on_mesh.predicted_peak());
}

TEST(MeshStepRunner, ACollectiveOffAMeshIsRefused) {
  const Linearization lin = placed(parse_program(with_policy(kDataParallelStep, "nothing_saveable"), "dp"));
  const RandomInputs in = random_inputs(parse_program(kWholeModel, "whole"), 3);
  try {
    OneShotRunner(lin, reference_backend()).run(in.constants, in.arguments);
    FAIL() << "ran a collective off a mesh";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("off a mesh"), std::string::npos) << e.what();
  }
}

// A value GSPMD's rules split, outside any shard_map, needs XLA's implicit collectives.
TEST(MeshStepRunner, AValueSplitByNoShardMapIsRefused) {
  const Linearization lin = placed(parse_program(R"({ lambda ; a:f32[8@x] w:f32[4]. let
      b:f32[8] = sin a
      c:f32[] = reduce_sum[axes=(0,)] b
      s:f32[4] = shard_map[check_vma=False in_specs=(P(),) jaxpr={ lambda ; v:f32[4]. let
          t:f32[4] = psum[axes=('x',) axis_index_groups=None] v
        in (t,) } mesh=Mesh('x': 2) out_specs=(P(),)] w
    in (c, s) })",
                                                 "gspmd"));
  try {
    run_on_simulated_devices(lin, *lin.graph.mesh, reference_backend(), {}, {iota({8}), iota({4})});
    FAIL() << "ran a value split by no shard_map";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument 0 (f32[8]) is split over the mesh, but by no shard_map"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rematkit::testing
