// Runs a control-flow step that has no compiled body (a while: JAX never differentiates one) in the
// interpreter, on tensors converted from and to the step's buffers.
#pragma once
#include <vector>

#include "../schedule/loop_program.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"

namespace rematkit {

class InterpretedLoopRunner {
 public:
  explicit InterpretedLoopRunner(const LoopProgram& loop) : loop_(loop) {}
  // The interpreter runs no collectives: it takes no transport.
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* /*transport*/) const;

 private:
  const LoopProgram& loop_;
};

}  // namespace rematkit
