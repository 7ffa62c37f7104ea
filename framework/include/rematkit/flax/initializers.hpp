// Flax's initializers (jax.nn.initializers, re-exported by flax.linen.initializers).
#pragma once
#include <functional>
#include <vector>

#include "rematkit/random/threefry.hpp"
#include "rematkit/types.hpp"

namespace rematkit::flax {

// init(key, shape, mode) -> float32 values in row-major order.
using Initializer = std::function<std::vector<float>(const random::Key&, const Shape&, random::PrngMode)>;

Initializer zeros();
Initializer ones();
Initializer constant(float value);
Initializer normal(float stddev = 1e-2f);
Initializer uniform(float scale = 1e-2f);

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution { kTruncatedNormal, kNormal, kUniform };
// variance_scaling(scale, mode, distribution, in_axis, out_axis). Shapes of rank < 2 are a
// bad-input Error when the initializer runs, as in JAX.
Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, int in_axis = -2,
                             int out_axis = -1);

Initializer lecun_normal();
Initializer lecun_uniform();
Initializer glorot_normal();
Initializer glorot_uniform();
Initializer he_normal();
Initializer he_uniform();
inline Initializer xavier_normal() { return glorot_normal(); }
inline Initializer xavier_uniform() { return glorot_uniform(); }
inline Initializer kaiming_normal() { return he_normal(); }
inline Initializer kaiming_uniform() { return he_uniform(); }

}  // namespace rematkit::flax
