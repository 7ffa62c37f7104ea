// Kernel workspaces are buffers of the memory plan: a kernel step whose backend asks for scratch
// bytes gets a buffer alive at that step alone, so the predicted peak counts every byte a step
// uses. The highway backend's add expands an operand with size-1 dims into its workspace (here
// b:f32[1,3] to f32[4,3]: 48 bytes, 64 in the arena); the reference backend asks for none.
#include <gtest/gtest.h>

#include <algorithm>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/runtime/step_runner.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

bool contains(const std::vector<int>& list, int x) { return std::find(list.begin(), list.end(), x) != list.end(); }

const char* kBroadcastAdd = "{ lambda ; a:f32[4,3] b:f32[1,3]. let c:f32[4,3] = add a b in (c,) }";

const std::vector<Tensor> kInputs = {Tensor{Type{DType::kF32, {4, 3}}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
                                     Tensor{Type{DType::kF32, {1, 3}}, {0.5, -1, 2}}};

TEST(KernelWorkspace, IsABufferOfItsStepAloneAndCountsInThePeak) {
  if (!backend_installed("highway")) GTEST_SKIP() << "the highway backend is not built";
  const Linearization lin = linearize_with(parse_program(kBroadcastAdd, "p"));
  for (const char* backend : {"highway", "reference"}) {
    SCOPED_TRACE(backend);
    const bool expands = std::string(backend) == "highway";
    OneShotRunner runner(lin, BackendOptions{{backend}, &default_plugins()}, Pass::kForward);
    const StepProgram& program = runner.program();
    // Steps: load a, load b, the add, the readout.
    ASSERT_EQ(program.steps().size(), 4u);
    const Step& add = program.steps()[2];
    ASSERT_EQ(add.kind, StepKind::kKernel);
    if (expands) {
      ASSERT_GE(add.workspace, 0);
      const BufferRequest& scratch = program.layout().buffers[static_cast<size_t>(add.workspace)];
      EXPECT_EQ(scratch.bytes, 4 * 3 * 4);
      EXPECT_EQ(scratch.first_step, 2);
      EXPECT_EQ(scratch.last_step, 2);
      EXPECT_TRUE(contains(add.acquire, add.workspace));
      EXPECT_TRUE(contains(add.release, add.workspace));
    } else {
      EXPECT_EQ(add.workspace, -1);
    }
    // At the add, a, b and c are alive (64 bytes each in the arena), and the scratch with them.
    const int64_t peak = expands ? 4 * 64 : 3 * 64;
    EXPECT_EQ(program.layout().arena(MemorySpace::kDevice), peak);
    const GradientResult result = runner.run({}, kInputs);
    EXPECT_EQ(runner.measured_peak(), peak);
    ASSERT_EQ(result.outputs.size(), 1u);
    for (size_t i = 0; i < 12; ++i)
      EXPECT_EQ(result.outputs[0].data[i], kInputs[0].data[i] + kInputs[1].data[i % 3]) << i;
  }
}

// Inside a loop body too: the scan's body arena (the loop step's workspace) holds its kernels' scratch.
TEST(KernelWorkspace, InsideALoopBodyIsPartOfTheBodysArena) {
  if (!backend_installed("highway")) GTEST_SKIP() << "the highway backend is not built";
  const Program scan = parse_program(
      "{ lambda ; b:f32[1,3] xs:f32[2,4,3]. let\n"
      "    ys:f32[2,4,3] = scan[jaxpr={ lambda ; c:f32[1,3] x:f32[4,3]. let y:f32[4,3] = add x c in (y,) }\n"
      "      length=2 num_carry=0 num_consts=1 reverse=False] b xs\n"
      "  in (ys,) }",
      "p");
  const Linearization lin = linearize_with(scan);
  const std::vector<Tensor> inputs = {
      Tensor{Type{DType::kF32, {1, 3}}, {0.5, -1, 2}},
      Tensor{Type{DType::kF32, {2, 4, 3}}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}}};
  for (const char* backend : {"highway", "reference"}) {
    SCOPED_TRACE(backend);
    OneShotRunner runner(lin, BackendOptions{{backend}, &default_plugins()}, Pass::kForward);
    const StepProgram& program = runner.program();
    const auto loop = std::find_if(program.steps().begin(), program.steps().end(),
                                   [](const Step& s) { return s.kind == StepKind::kLoop; });
    ASSERT_NE(loop, program.steps().end());
    ASSERT_GE(loop->workspace, 0);
    // The body's given c and x and its result y live through its two steps (the add and the
    // readout), 64 bytes each; on highway the add's scratch joins them at the add.
    const int64_t body_arena = std::string(backend) == "highway" ? 4 * 64 : 3 * 64;
    EXPECT_EQ(program.layout().buffers[static_cast<size_t>(loop->workspace)].bytes, body_arena);
    const GradientResult result = runner.run({}, inputs);
    EXPECT_EQ(runner.measured_peak(), program.layout().arena(MemorySpace::kDevice));
    ASSERT_EQ(result.outputs.size(), 1u);
    for (size_t i = 0; i < 24; ++i)
      EXPECT_EQ(result.outputs[0].data[i], inputs[1].data[i] + inputs[0].data[i % 3]) << i;
  }
}

}  // namespace
}  // namespace rematkit::testing
