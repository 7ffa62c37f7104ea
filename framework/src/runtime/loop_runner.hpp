// Runs one loop step by its kind: a scan's forward or recompute part (scan_runner.hpp), its
// transpose (scan_transpose_runner.hpp), a cond's part (cond_runner.hpp), or a control-flow step
// the interpreter runs (interpreted_loop_runner.hpp).
#pragma once
#include <variant>
#include <vector>

#include "cond_runner.hpp"
#include "interpreted_loop_runner.hpp"
#include "scan_runner.hpp"
#include "scan_transpose_runner.hpp"

namespace rematkit {

class LoopRunner {
 public:
  // A body's arena lives in `workspace`, the loop step's buffer.
  LoopRunner(const LoopProgram& loop, std::byte* workspace);
  // `transport`: the device's, where the body runs collectives on a mesh (else null).
  void run(const std::vector<const void*>& in, const std::vector<void*>& out, MeshTransport* transport);

 private:
  using Runner = std::variant<ScanRunner, ScanTransposeRunner, CondRunner, InterpretedLoopRunner>;
  static Runner runner_for(const LoopProgram& loop, std::byte* workspace);

  Runner runner_;
};

}  // namespace rematkit
