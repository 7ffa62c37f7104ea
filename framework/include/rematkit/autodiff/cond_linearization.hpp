// A cond of the program, linearized whole (jax/_src/lax/control_flow/conditionals.py: _cond_jvp,
// _cond_partial_eval, _cond_transpose). Each branch is linearized on its own, with the tangents of
// every operand that has one; a branch's residuals go into slots shared by type across branches
// (_merge_branch_residuals), and a branch fills the slots it does not use with zeros
// (_join_cond_outputs). The flat graph holds three equations that share this:
//   forward    index, operands                                 -> outputs, residual slots
//   tangent    index, slots, [operands], nonzero operand tangents -> nonzero output tangents (transposed, never run)
//   transpose  index, slots, [operands], output cotangents      -> operand cotangents (the same branch, backwards)
// The index itself is kept for the backward pass, as JAX keeps it. Inside a checkpoint
// (_cond_partial_eval_custom), the slots hold only what its policy saves, and the transpose takes
// the operands too: the branch computes the rest again before its backward pass.
#pragma once

#include <vector>

#include "rematkit/autodiff/linearize.hpp"

namespace rematkit {

struct REMATKIT_CORE_EXPORT CondLinearization {
  std::vector<Linearization> branches;  // arguments: the operands (after the index)
  std::vector<bool> tangent_given;      // per operand: it has a nonzero tangent (each branch differentiates these)
  std::vector<bool> tangent_out;        // per output: nonzero in some branch (JAX's union)
  std::vector<Type> slots;              // the residual slots' types
  std::vector<std::vector<ValueId>> kept;    // per branch: the values its slots hold
  std::vector<std::vector<size_t>> slot_of;  // per branch, per kept value: its slot
  // Inside a checkpoint: the transpose takes the operands, and each branch first computes again
  // (these equations of its forward pass) what its backward pass reads and its slots do not hold.
  bool operands_kept = false;
  std::vector<std::vector<int>> recompute_eqns;
};

}  // namespace rematkit
