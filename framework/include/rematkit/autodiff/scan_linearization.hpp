// A scan of the program, linearized whole (jax/_src/lax/control_flow/loops.py: _scan_jvp,
// _partial_eval, _partial_eval_custom, _scan_transpose). Its body is linearized once, by
// its own checkpoints' policies; the flat graph then holds up to four equations that share this:
//   forward    consts, init, xs, hoisted          -> carries, ys, the saved residuals stacked [L, ...]
//   recompute  consts, init, xs, hoisted, saved   -> the other residuals stacked (in a checkpoint's
//                                                   backward pass: what its policy did not save)
//   tangent    residuals, nonzero input tangents  -> nonzero output tangents (transposed, never run)
//   transpose  residuals, output cotangents       -> input cotangents, a scan in the other direction
// Execution runs the body's compiled passes once per iteration (loop_program.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rematkit/autodiff/linearize.hpp"

namespace rematkit {

// Where the backward pass of the body finds one of its residuals.
struct ScanResidual {
  enum class Kind {
    kConst,       // a const operand: the same every iteration (forwarded, as JAX forwards it)
    kXs,          // a slice of an xs operand (forwarded)
    kHoisted,     // computed from consts alone, once, before the loop (JAX's loop-invariant hoisting)
    kSaved,       // stacked by the forward scan
    kRecomputed,  // stacked by the recompute scan
  };
  Kind kind = Kind::kSaved;
  size_t index = 0;  // into the consts, xs, hoisted, saved or recomputed lists
};

struct REMATKIT_CORE_EXPORT ScanLinearization {
  int64_t length = 0;
  bool reverse = false;
  size_t num_consts = 0, num_carry = 0, num_xs = 0, num_ys = 0;
  Linearization body;  // body.arguments: consts, carries, x slices; body.outputs: carries, y slices

  std::vector<bool> differentiated;  // per body argument (consts, carries from the fixpoint, xs)
  std::vector<bool> tangent_given;   // per body argument: the scan's operand has a nonzero tangent
  std::vector<bool> tangent_out;     // per body output: the scan's output tangent is nonzero

  std::vector<ValueId> hoisted;      // body values the hoisted equations compute
  std::vector<int> hoisted_eqns;     // body equations run once, before the loop, at the outer level
  std::vector<ValueId> saved;        // body values the forward scan stacks
  std::vector<ValueId> recomputed;   // body values the recompute scan stacks
  std::vector<ScanResidual> residuals;  // per body residual (body.residuals order)

  std::vector<int> forward_eqns;     // body equations per iteration of the forward scan
  std::vector<int> recompute_eqns;   // body equations per iteration of the recompute scan

  // Iteration `step` (0 first) runs on row row_of(step) of the stacked operands.
  int64_t row_of(int64_t step) const { return reverse ? length - 1 - step : step; }
};

}  // namespace rematkit
