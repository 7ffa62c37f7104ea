// The passes of linearize(), in the order it runs them. Internal to autodiff.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/autodiff/linearize.hpp"

namespace rematkit::autodiff {

// Inlines calls and applies JVP rules: fills lin.graph, constants, arguments, outputs and
// output_tangents. Checkpoint policies are resolved here (errors name the checkpoint's location).
void trace_jvp(const Program& program, const LinearizeOptions& options, Linearization& lin);

// One step of the backward pass, before transposition: run a known equation again, or transpose
// a tangent equation.
struct BackwardStep {
  bool recompute = false;
  int eqn = -1;
};

// Classic remat partial evaluation, applied level by level: fills forward, decisions, residuals and
// recomputed, and returns the backward pass's steps in order.
std::vector<BackwardStep> partial_eval(Linearization& lin);

// `policy`'s answer for known equation `e` of `g`, as a checkpoint asks it (a custom_jvp_call's body
// answers as the call; a scan's parts as scan_jvp.cpp decides them); errors located at the equation.
// `site` is the equation's stable name (equation_sites), when the caller has one.
PolicyAnswer ask_policy(const Policy& policy, const FlatGraph& g, int e, std::string_view site = {});

// Shows each policy of `g`'s checkpoints every equation it may decide (Policy::survey), once per
// policy, before partial evaluation asks it anything.
void survey_policies(const FlatGraph& g, const std::vector<std::string>& sites);

// Turns the backward steps into equations: recomputations stay, tangent equations are transposed.
// Fills cotangent_seeds, backward and gradients.
void transpose_linear(Linearization& lin, const std::vector<BackwardStep>& steps);

}  // namespace rematkit::autodiff
