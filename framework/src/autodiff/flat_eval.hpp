// The interpreter over a flat graph: equations evaluated on tensors in a chosen arithmetic, a scan's
// or a cond's parts through their bodies' passes, iteration by iteration (what the loop runners,
// runtime/loop_runner.hpp, do on buffers). interpret_gradient() and the finite-difference checks run on it.
#pragma once
#include <optional>
#include <vector>

#include "rematkit/autodiff/graph.hpp"
#include "rematkit/interpreter/tensor.hpp"

namespace rematkit::autodiff {

// The value `v` in `values`: a literal is filled on first read; anything else must have been
// computed or given (an internal error naming `pass` otherwise: how a residual set that is too
// small shows up).
const Tensor& read_value(const FlatGraph& g, std::vector<std::optional<Tensor>>& values, ValueId v, const char* pass);

// Runs `eqns` of `g` in order on `values` (per value of g; literals filled on first read). A value
// read before it is computed or given is an internal error naming `pass`.
void evaluate_flat(const FlatGraph& g, const std::vector<int>& eqns, std::vector<std::optional<Tensor>>& values,
                   Arithmetic arithmetic, const char* pass);

}  // namespace rematkit::autodiff
