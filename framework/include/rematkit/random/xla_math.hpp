// Float32 special functions as XLA:CPU compiles them (reference/flax-init.md section 3), so that
// samplers give JAX's bits: fused multiply-adds where XLA:CPU contracts them.
#pragma once

#include "rematkit/flax/export.hpp"

namespace rematkit::random {

// XLA:CPU's f32 erf: x * P(x^2) / Q(x^2), saturating to +-1 beyond |x| >= 3.8325069.
REMATKIT_FLAX_EXPORT float xla_erf(float x);
// Giles' single-precision erf_inv as XLA lowers chlo.erf_inv (w = -log1p(-x*x), two branches).
REMATKIT_FLAX_EXPORT float xla_erf_inv(float x);
// XLA's log1p: a Cephes rational for |x| < sqrt(2)-1, else log(1 + x).
REMATKIT_FLAX_EXPORT float xla_log1p(float x);
// XLA:CPU's f32 log: Cephes' polynomial as Eigen's plog evaluates it.
REMATKIT_FLAX_EXPORT float xla_log(float x);

}  // namespace rematkit::random
