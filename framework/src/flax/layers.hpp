// Flax's and jax.nn's elementwise and normalization layers, traced as JAX traces them. Shared by
// ModelBuilder's layers and the gpt model. Internal to rematkit::flax.
#pragma once

#include "rematkit/program_builder.hpp"

namespace rematkit::flax {

// nn.LayerNorm over the last axis with force_float32_reductions=False (statistics in x's dtype):
// var = max(0, E[x^2] - E[x]^2), (x - E[x]) * rsqrt(var + epsilon) * scale + bias.
Atom layer_norm(ProgramBuilder& b, Atom x, Atom scale, Atom bias, double epsilon = 1e-6);
// jax.nn.gelu: approximate, x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); exact,
// 0.5 x erfc(-x sqrt(1/2)).
Atom gelu(ProgramBuilder& b, Atom x, bool approximate);
// jax.nn.silu: x * sigmoid(x).
Atom silu(ProgramBuilder& b, Atom x);
// x reduced over its last axis, broadcast back with a 1 there (jnp's keepdims).
Atom keep_last(ProgramBuilder& b, Atom reduced, const Shape& like);

}  // namespace rematkit::flax
