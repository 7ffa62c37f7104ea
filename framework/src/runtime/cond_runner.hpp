// Runs a cond's forward or transpose part (jax/_src/lax/control_flow/conditionals.py): the branch
// the index selects, its operands and cotangents copied into its given buffers and its results out.
#pragma once
#include <vector>

#include "loop_body.hpp"

namespace rematkit {

class CondRunner {
 public:
  // One body per branch, each with its arena in `workspace` (one branch runs at a time).
  CondRunner(const LoopProgram& loop, std::byte* workspace);
  // `transport`: the device's, where the branch runs collectives on a mesh (else null).
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);

 private:
  size_t branch_index(const void* index) const;
  void run_forward(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);
  void run_transpose(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);

  const LoopProgram& loop_;
  const CondLinearization& cond_;
  std::vector<LoopBody> branches_;
  std::vector<char> filled_;  // per residual slot: the branch that ran filled it (run_forward's)
};

}  // namespace rematkit
