#include "loop_runner.hpp"

namespace rematkit {

LoopRunner::Runner LoopRunner::runner_for(const LoopProgram& loop, std::byte* workspace) {
  if (loop.cond) return Runner(std::in_place_type<CondRunner>, loop, workspace);
  if (!loop.scan) return Runner(std::in_place_type<InterpretedLoopRunner>, loop);
  if (loop.part == ControlFlowPart::kTranspose) return Runner(std::in_place_type<ScanTransposeRunner>, loop, workspace);
  return Runner(std::in_place_type<ScanRunner>, loop, workspace);
}

LoopRunner::LoopRunner(const LoopProgram& loop, std::byte* workspace) : runner_(runner_for(loop, workspace)) {}

void LoopRunner::run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport) {
  std::visit([&](auto& runner) { runner.run(in, out, transport); }, runner_);
}

}  // namespace rematkit
