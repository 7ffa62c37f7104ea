// Reverse-mode autodiff the JAX way: linearize (JVP rules that emit coefficient equations), partial
// evaluation driven by each checkpoint's policy, dead-code elimination, and transposition of the
// linear part. The result says what the forward pass computes and keeps, and what the backward
// pass recomputes and runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/autodiff/graph.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

// A value the forward pass keeps for the backward pass.
struct Residual {
  ValueId value = kNoValue;    // the kept value (its device original, for an offloaded one)
  Type type;                   // as kept: memory space pinned_host when offloaded
  int first_reader = -1;       // the first backward-pass equation that reads it
  int region = 0;              // the region whose backward pass reads it
};

// How to linearize: where policies come from, a policy for the whole program, what to differentiate.
struct LinearizeOptions {
  // Resolves policy specs (the checkpoints' and `policy`); default_policies() if null.
  const PolicyRegistry* policies = nullptr;
  // When not empty, a policy spec such as "save_only_these_names('a')": the whole program is
  // checkpointed with it (rematkit residuals --policy). Errors in it are reported at `policy_source`.
  std::string policy;
  std::string policy_source = "--policy";
  // Indices of the arguments to differentiate with respect to, as jax.grad's argnums: a training
  // step takes the params, not the data, so nothing is kept or computed only for the data's
  // gradient. Empty: every floating argument (what print_saved_residuals reports).
  std::vector<size_t> differentiate;
  // No argument at all (a loop body no tangent reaches): the linearization is its forward pass alone.
  bool differentiate_nothing = false;
  // Prepended to the graph's sites (FlatGraph::site_prefix): set for a scan body by its scan.
  std::string site_prefix;
};

// A program's forward pass, what it keeps (residuals) and its backward pass, as one flat graph
// of values and equations (graph.hpp); step_program.hpp compiles it for backends, residual_report.hpp
// prints it.
struct Linearization {
  FlatGraph graph;
  std::vector<ValueId> constants;       // graph values of the program's constants, in binder order
  std::vector<ValueId> arguments;       // graph values of the program's arguments, in binder order
  std::vector<ValueId> argument_tangents; // their tangents (kNoValue for non-floating arguments)
  std::vector<ValueId> outputs;         // primal outputs
  std::vector<ValueId> output_tangents; // kNoValue where an output's tangent is zero

  std::vector<int> forward;             // equations the forward pass runs, in order
  std::vector<PolicyAnswer> decisions;  // per equation: the outermost policy's answer (known equations;
                                        // Saveable where no checkpoint decides)
  std::vector<Residual> residuals;      // in print_saved_residuals order
  std::vector<int> recomputed;          // known equations the backward pass runs again, in order (an
                                        // equation inside nested checkpoints may run more than once)
  std::vector<ValueId> cotangent_seeds; // per output: the cotangent the backward pass is given
  std::vector<int> backward;            // in order: each checkpoint's recomputation runs where the
                                        // reverse pass reaches it, just before its transposed equations
  std::vector<ValueId> gradients;       // per argument: its cotangent (kNoValue for non-floating)
};

// JAX's linearize + partial eval + transpose of `program`, with checkpoints deciding by their
// policies what is kept: the one place a policy spec becomes a linearization. A bad-input Error for
// an unknown policy or a program it cannot differentiate.
REMATKIT_CORE_EXPORT Linearization linearize(const Program& program, const LinearizeOptions& options);

}  // namespace rematkit
