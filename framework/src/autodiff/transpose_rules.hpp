// Transpose rules (JAX's ad.primitive_transposes): the cotangents of a linear equation's linear
// operands, given its output's cotangent. One case per primitive; the ones JVP rules never emit
// as linear equations have none.
#pragma once
#include <functional>

#include "emitter.hpp"

namespace rematkit::autodiff {

// Receives the cotangent of operand `operand` of the equation being transposed.
using GiveCotangent = std::function<void(size_t operand, ValueId cotangent)>;

// Emits (through `em`, in the backward role) the cotangents of `eqn`'s linear operands (its inputs
// that are tangents) from `ct`, its output's cotangent, and hands each to `give`.
void transpose_rule(Emitter& em, const FlatGraph& graph, const FlatEquation& eqn, ValueId ct, const GiveCotangent& give);

}  // namespace rematkit::autodiff
