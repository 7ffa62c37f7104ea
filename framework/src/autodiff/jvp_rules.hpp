// JVP rules, as lax.py writes them: each emits its primal-only coefficient equations, then the
// tangent equations, and returns the output tangents.
#pragma once
#include <vector>

#include "emitter.hpp"

namespace rematkit::autodiff {

// `x` are the primal inputs, `y` the primal outputs, `t` the input tangents (kNoValue = zero).
// Returns one tangent per output (kNoValue = zero). Not called for call primitives.
std::vector<ValueId> jvp_rule(Emitter& em, Prim prim, const Params& params, const std::vector<ValueId>& x,
                              const std::vector<ValueId>& y, const std::vector<ValueId>& t);

// lax._balanced_eq(x, z, y): 1 where x == z and y != z, 1/2 where both equal z, else 0 (max's and
// min's JVP weights).
ValueId balanced_eq(Emitter& em, ValueId x, ValueId z, ValueId y);

// The tangent of softmax over `axes` (jax.nn.softmax's custom JVP), given its output y and input
// tangent g; `where` is its mask, or kNoValue.
ValueId softmax_tangent(Emitter& em, ValueId y, ValueId g, const std::vector<int64_t>& axes, ValueId where);

}  // namespace rematkit::autodiff
