// Steps on a mesh whose devices are MPI ranks, run under `mpirun -n 2` and `-n 4` by ctest: the
// data-parallel, FSDP and tensor-parallel steps (hand-written, and the gpt's) and every collective
// give the same bits as the same steps on the simulated mesh (which mesh_step_runner_test.cpp
// checks against the whole models; the gpt's here too), every rank's arena reaches the predicted peak, and ranks that disagree at a collective
// or one that stops on an error stop every rank with the same error. A test whose mesh has
// another number of devices than there are ranks is skipped.
#include <gtest/gtest.h>

#include "rematkit/analysis/device_placement.hpp"
#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/parallel_step.hpp"
#include "rematkit/mpi/mpi_transport.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "support/sharded_steps.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

mpi::MpiSession* session = nullptr;  // the whole run's (main)
constexpr double kTimeout = 60;

Linearization placed(const std::string& text) {
  Linearization lin = linearize_with(parse_program(text, "step"));
  place_on_mesh(lin, *lin.graph.mesh);
  return lin;
}

struct RankCase {
  const char* name;
  const char* program;
  const char* policy;
};

const RankCase kCases[] = {
    {"fsdp_nothing_saveable", kFsdpStep, "nothing_saveable"},
    {"fsdp_dots_saveable", kFsdpStep, "dots_saveable"},
    {"data_parallel_nothing_saveable", kDataParallelStep, "nothing_saveable"},
    {"tensor_parallel_nothing_saveable", kTensorParallelStep, "nothing_saveable"},
    {"tensor_parallel_dots_saveable", kTensorParallelStep, "dots_saveable"},
    {"every_collective", kEveryCollective, ""},
};

class OnRanksTest : public ::testing::TestWithParam<RankCase> {};

TEST_P(OnRanksTest, TheSameBitsAsTheSimulatedMeshAndThePredictedPeak) {
  const RankCase& c = GetParam();
  const Linearization lin = placed(with_policy(c.program, c.policy));
  const Mesh& mesh = *lin.graph.mesh;
  if (mesh.num_devices() != session->size()) GTEST_SKIP() << "a mesh of " << mesh.num_devices() << " devices";
  const bool collectives = std::string(c.name) == "every_collective";
  const std::vector<Tensor> arguments =
      collectives ? std::vector<Tensor>{iota({8}), iota({4, 4})} : random_inputs(parse_program(kWholeModel, "whole"), 11).arguments;
  const BackendOptions backends{{"reference"}, &default_plugins()};

  mpi::MpiTransport transport(*session, mesh, kTimeout);
  MeshStepRunner runner(lin, mesh, backends);
  const GradientResult got = runner.run(transport, {}, arguments);
  EXPECT_EQ(runner.measured_peak(MemorySpace::kDevice), runner.layout().arena(MemorySpace::kDevice));

  const MeshRun simulated = run_on_simulated_devices(lin, mesh, backends, {}, arguments);
  ASSERT_EQ(got.outputs.size(), simulated.result.outputs.size());
  for (size_t k = 0; k < got.outputs.size(); ++k) EXPECT_EQ(got.outputs[k].data, simulated.result.outputs[k].data);
  ASSERT_EQ(got.gradients.size(), simulated.result.gradients.size());
  for (size_t a = 0; a < got.gradients.size(); ++a) {
    ASSERT_EQ(got.gradients[a].has_value(), simulated.result.gradients[a].has_value());
    if (got.gradients[a]) {
      EXPECT_EQ(got.gradients[a]->data, simulated.result.gradients[a]->data) << "argument " << a;
    }
  }
  if (collectives) expect_what_parallel_py_defines(got.outputs);
}

INSTANTIATE_TEST_SUITE_P(Steps, OnRanksTest, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// The gpt's training step written for data parallelism, FSDP and Megatron tensor parallelism over
// as many devices as there are ranks (flax/parallel_step.hpp), a rank per device: the same bits as
// the simulated mesh's, every rank's arena at its predicted peak, and the gradients within 1e-6 of
// the whole model's on one device (f64: the truth both are held to).
struct GptCase {
  const char* name;
  ParallelConfig parallel;  // a 0 size: as many as there are ranks
  const char* policy;
};

class GptOnRanksTest : public ::testing::TestWithParam<GptCase> {};

TEST_P(GptOnRanksTest, TheSimulatedMeshsBitsAndTheWholeModelsGradients) {
  const GptCase& c = GetParam();
  const int64_t n = session->size();
  const ParallelConfig p{c.parallel.data ? c.parallel.data : n, c.parallel.fsdp ? c.parallel.fsdp : n,
                         c.parallel.tensor ? c.parallel.tensor : n};
  GptConfig config;
  config.vocab = 16;
  config.sequence = 4;
  config.model = 16;
  config.heads = 4;
  config.layers = 2;
  config.mlp = 32;
  config.batch = 4;
  const Model whole = build_gpt(config, c.policy, 3);
  GptConfig one = config;
  one.batch = config.batch / p.batch_shards();
  one.tensor = p.tensor;
  const Model share = build_gpt(one, c.policy, 3, ModelValues::kNone);
  const Program step = parallel_step(share.program, whole.program, p, "gpt", share.tensor_splits);
  Linearization lin = linearize_with(step);
  place_on_mesh(lin, *lin.graph.mesh);
  const Mesh& mesh = *lin.graph.mesh;
  ASSERT_EQ(mesh.num_devices(), n);
  const std::vector<Tensor> arguments = step_arguments(whole.arguments, step);
  const BackendOptions backends{default_plugins().fastest_backends(), &default_plugins()};

  mpi::MpiTransport transport(*session, mesh, kTimeout);
  MeshStepRunner runner(lin, mesh, backends);
  const GradientResult got = runner.run(transport, {}, arguments);
  EXPECT_EQ(runner.measured_peak(MemorySpace::kDevice), runner.layout().arena(MemorySpace::kDevice));

  const MeshRun simulated = run_on_simulated_devices(lin, mesh, backends, {}, arguments);
  EXPECT_EQ(got.outputs[0].data, simulated.result.outputs[0].data);
  const GradientResult want = interpret_gradient(linearize_with(whole.program), {}, whole.arguments, Arithmetic::kFloat64);
  EXPECT_NEAR(got.outputs[0].data[0], want.outputs[0].data[0], 1e-6);
  ASSERT_EQ(got.gradients.size(), want.gradients.size());
  for (size_t a = 0; a < got.gradients.size(); ++a) {
    ASSERT_EQ(got.gradients[a].has_value(), want.gradients[a].has_value()) << "argument " << a;
    if (!got.gradients[a]) continue;
    EXPECT_EQ(got.gradients[a]->data, simulated.result.gradients[a]->data) << "argument " << a;
    for (size_t i = 0; i < got.gradients[a]->data.size(); ++i)
      ASSERT_NEAR(got.gradients[a]->data[i], want.gradients[a]->data[i], 1e-6) << "argument " << a << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Gpt, GptOnRanksTest,
                         ::testing::Values(GptCase{"data_parallel", {0, 1, 1}, "nothing_saveable"},
                                           GptCase{"fsdp", {1, 0, 1}, "dots_saveable"},
                                           GptCase{"tensor_parallel", {1, 1, 0}, "nothing_saveable"}),
                         [](const auto& info) { return std::string(info.param.name); });

// The last rank runs psum over its axes in the other order: every rank stops with one error that
// names both.
TEST(OnRanks, RanksThatDisagreeAllStopWithTheSameError) {
  const Mesh mesh = parse_mesh_option("x=" + std::to_string(session->size()), {});
  mpi::MpiTransport transport(*session, mesh, kTimeout);
  const bool last = session->rank() == session->size() - 1;
  std::vector<int64_t> everyone;
  for (int64_t d = 0; d < mesh.num_devices(); ++d) everyone.push_back(d);
  float mine = 1, all[8] = {};
  try {
    transport.all_gather(last ? "psum[axes=('y', 'x')]" : "psum[axes=('x', 'y')]", everyone, &mine, sizeof mine, all);
    FAIL() << "ranks that disagree went on";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the ranks disagree at a collective: rank 0 runs psum[axes=('x', 'y')] (4 bytes) where rank " +
                                         std::to_string(session->size() - 1) + " runs psum[axes=('y', 'x')] (4 bytes)");
  }
}

// Rank 1 fails where the others go on to a collective: every rank stops with its error.
TEST(OnRanks, ARankThatStopsStopsEveryRankWithItsError) {
  const Mesh mesh = parse_mesh_option("x=" + std::to_string(session->size()), {});
  mpi::MpiTransport transport(*session, mesh, kTimeout);
  std::vector<int64_t> everyone;
  for (int64_t d = 0; d < mesh.num_devices(); ++d) everyone.push_back(d);
  float mine = 1, all[8] = {};
  try {
    if (session->rank() == 1) session->stopped(Error(ErrorKind::kBadInput, "inputs.json:1:2: not a number"), kTimeout);
    transport.all_gather("all_gather[axis_name=x]", everyone, &mine, sizeof mine, all);
    FAIL() << "went on past a rank that stopped";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1: inputs.json:1:2: not a number");
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  }
  // The ranks go on together after it.
  transport.all_gather("all_gather[axis_name=x]", everyone, &mine, sizeof mine, all);
  for (int64_t d = 0; d < mesh.num_devices(); ++d) EXPECT_EQ(all[d], 1.0f);
}

}  // namespace
}  // namespace rematkit::testing

int main(int argc, char** argv) {
  rematkit::mpi::MpiSession session;
  rematkit::testing::session = &session;
  ::testing::InitGoogleTest(&argc, argv);
  // Only rank 0 reports: every rank runs every test, and a failure on any rank fails the job.
  if (session.rank() != 0) delete ::testing::UnitTest::GetInstance()->listeners().Release(
      ::testing::UnitTest::GetInstance()->listeners().default_result_printer());
  return RUN_ALL_TESTS();
}
