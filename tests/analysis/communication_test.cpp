// The bytes a device sends in a gradient step's collectives, per pass, worked out by hand for the
// FSDP and data-parallel steps of sharded_steps.hpp (f32; a [2,4] block is 32 bytes, a whole [4,4]
// weight 64).
#include <gtest/gtest.h>

#include "rematkit/analysis/communication.hpp"
#include "rematkit/analysis/device_placement.hpp"
#include "support/sharded_steps.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

GradientCommunication communication_of(const char* program, const char* policy) {
  Linearization lin = linearize_with(parse_program(with_policy(program, policy), "step"));
  place_on_mesh(lin, *lin.graph.mesh);
  return gradient_communication(lin, *lin.graph.mesh);
}

// FSDP on (data=2, fsdp=2). Forward: each layer gathers its weight over fsdp, one block from the
// other device (32 each, 64); the loss's psum over all 4 devices sends 2 (n-1)/n of 4 bytes (6).
// Backward: that psum's transpose (6); each gather's transpose, a psum_scatter over fsdp of the
// whole weight's cotangent, (n-1)/n of 64 (32 each, 64); each weight block's cotangent summed over
// data, where the weight is replicated, 2 (n-1)/n of 32 (32 each, 64): 134. nothing_saveable and
// dots_saveable keep neither gather's result (no dot), so the backward pass gathers both again (64);
// everything_saveable keeps them.
TEST(Communication, FsdpReGathersWhatItDoesNotKeep) {
  for (const char* policy : {"nothing_saveable", "dots_saveable", "everything_saveable"}) {
    const GradientCommunication c = communication_of(kFsdpStep, policy);
    EXPECT_EQ(c.forward, 70) << policy;
    EXPECT_EQ(c.recompute, std::string(policy) == "everything_saveable" ? 0 : 64) << policy;
    EXPECT_EQ(c.backward, 134) << policy;
  }
}

// Data parallel: the weights whole on every device. Forward: the loss's psum (6). Backward: its
// transpose (6) and each weight's cotangent summed over all 4 devices, 2 (n-1)/n of 64 (96 each,
// 192). Nothing to recompute: no collective inside a checkpoint.
TEST(Communication, DataParallelSumsTheWeightsGradients) {
  const GradientCommunication c = communication_of(kDataParallelStep, "nothing_saveable");
  EXPECT_EQ(c.forward, 6);
  EXPECT_EQ(c.recompute, 0);
  EXPECT_EQ(c.backward, 198);
  EXPECT_EQ(communication_line(c), "communication per device: forward 6 B, recomputed 0 B (re-communicated), backward 198 B");
}

}  // namespace
}  // namespace rematkit::testing
