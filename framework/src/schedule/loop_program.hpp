// A loop step of a step program: one part of a linearized scan (scan_linearization.hpp), whose
// body pass is compiled once into a step program of its own. Its arena is planned once and lives
// in the loop step's workspace buffer, reused by every iteration; the stacked values are the loop
// step's own inputs and outputs, allocated once at full size in the enclosing program.
#pragma once
#include <memory>
#include <vector>

#include "rematkit/autodiff/cond_linearization.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/autodiff/scan_linearization.hpp"
#include "rematkit/schedule/step_program.hpp"

namespace rematkit {

// One pass of a body (or of a branch) compiled on its own, and its given and result buffers.
struct BodyPass {
  std::unique_ptr<StepProgram> program;
  std::vector<int> given;
  std::vector<int> results;
};

struct LoopProgram {
  std::shared_ptr<const ScanLinearization> scan;  // a scan's part; or
  std::shared_ptr<const CondLinearization> cond;  // a cond's part (one body pass per branch); or neither:
                                                  // a control-flow equation the interpreter runs
  ControlFlowPart part = ControlFlowPart::kForward;
  std::vector<BodyPass> bodies;
  int64_t workspace_bytes = 0;  // the largest body arena: one body runs at a time
  // A while (never differentiated: JAX cannot) runs in the interpreter, on tensors converted from
  // and to its buffers; its temporaries are the interpreter's, outside the memory plan.
  Equation interpreted;
  std::vector<Type> in_types, out_types;
  // The orders in which the loop runners (scan_runner.cpp, scan_transpose_runner.cpp,
  // cond_runner.cpp) fill a body's given buffers and read its results:
  //   scan forward    given: arguments (consts, carries, x slices), hoisted  results: carries, ys, saved
  //   scan recompute  given: arguments, hoisted, saved                       results: carries, recomputed
  //   transpose       given: residuals, cotangent seeds (nonzero ones)       results: differentiated gradients
  //   cond forward    given: the operands                                    results: outputs, residuals
};

// The loop program of scan part `eqn`, its body bound to `backends` as the enclosing program is;
// for a while, the interpreter's.
std::unique_ptr<LoopProgram> build_loop_program(const FlatGraph& graph, const FlatEquation& eqn, BackendSet& backends);

}  // namespace rematkit
