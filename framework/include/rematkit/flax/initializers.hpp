// Flax's initializers (jax.nn.initializers, re-exported by flax.linen.initializers).
#pragma once

#include <functional>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/random/threefry.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit::flax {

// init(key, shape, mode) -> float32 values in row-major order.
using Initializer = std::function<std::vector<float>(const random::Key&, const Shape&, random::PrngMode)>;

REMATKIT_FLAX_EXPORT Initializer zeros();
REMATKIT_FLAX_EXPORT Initializer ones();
REMATKIT_FLAX_EXPORT Initializer constant(float value);
REMATKIT_FLAX_EXPORT Initializer normal(float stddev = 1e-2f);
REMATKIT_FLAX_EXPORT Initializer uniform(float scale = 1e-2f);

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution { kTruncatedNormal, kNormal, kUniform };
// variance_scaling(scale, mode, distribution, in_axis, out_axis). Shapes of rank < 2 are a
// bad-input Error when the initializer runs, as in JAX.
REMATKIT_FLAX_EXPORT Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, int in_axis = -2,
                             int out_axis = -1);

REMATKIT_FLAX_EXPORT Initializer lecun_normal();
REMATKIT_FLAX_EXPORT Initializer lecun_uniform();
REMATKIT_FLAX_EXPORT Initializer glorot_normal();
REMATKIT_FLAX_EXPORT Initializer glorot_uniform();
REMATKIT_FLAX_EXPORT Initializer he_normal();
REMATKIT_FLAX_EXPORT Initializer he_uniform();
inline Initializer xavier_normal() { return glorot_normal(); }
inline Initializer xavier_uniform() { return glorot_uniform(); }
inline Initializer kaiming_normal() { return he_normal(); }
inline Initializer kaiming_uniform() { return he_uniform(); }

}  // namespace rematkit::flax
