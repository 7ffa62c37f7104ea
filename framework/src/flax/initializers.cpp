#include "rematkit/flax/initializers.hpp"

#include <cmath>

#include "rematkit/ir/error.hpp"
#include "rematkit/random/samplers.hpp"

namespace rematkit::flax {
namespace {

std::vector<float> scaled(std::vector<float> values, float factor) {
  for (float& v : values) v = v * factor;  // one f32 multiply per element, as the eager jnp op does
  return values;
}

}  // namespace

Initializer constant(float value) {
  return [value](const random::Key&, const Shape& shape, random::PrngMode) {
    return std::vector<float>(static_cast<size_t>(num_elements(shape)), value);
  };
}
Initializer zeros() { return constant(0.0f); }
Initializer ones() { return constant(1.0f); }

Initializer normal(float stddev) {
  return [stddev](const random::Key& key, const Shape& shape, random::PrngMode mode) {
    return scaled(random::normal(key, static_cast<uint64_t>(num_elements(shape)), mode), stddev);
  };
}

Initializer uniform(float scale) {
  return [scale](const random::Key& key, const Shape& shape, random::PrngMode mode) {
    return scaled(random::uniform(key, static_cast<uint64_t>(num_elements(shape)), 0.0f, 1.0f, mode), scale);
  };
}

Initializer variance_scaling(double scale, FanMode fan_mode, Distribution distribution, int in_axis, int out_axis) {
  return [=](const random::Key& key, const Shape& shape, random::PrngMode mode) {
    const int rank = static_cast<int>(shape.size());
    if (rank < 2)
      fail("variance_scaling: cannot compute input and output sizes of a " + std::to_string(rank) +
           "-dimensional weights tensor; it must be at least 2-D");
    const int in = in_axis < 0 ? in_axis + rank : in_axis;
    const int out = out_axis < 0 ? out_axis + rank : out_axis;
    // _compute_fans: the receptive field is everything but the in and out axes.
    const double receptive = static_cast<double>(num_elements(shape)) / static_cast<double>(shape[in]) /
                             static_cast<double>(shape[out]);
    const double fan_in = static_cast<double>(shape[in]) * receptive;
    const double fan_out = static_cast<double>(shape[out]) * receptive;
    const double denominator = fan_mode == FanMode::kFanIn    ? fan_in
                               : fan_mode == FanMode::kFanOut ? fan_out
                                                              : (fan_in + fan_out) / 2;
    const float variance = static_cast<float>(scale / denominator);  // jnp.array(scale / denominator, f32)
    const uint64_t n = static_cast<uint64_t>(num_elements(shape));
    switch (distribution) {
      case Distribution::kTruncatedNormal: {
        // The standard deviation of N(0, 1) truncated to (-2, 2).
        const float stddev = std::sqrt(variance) / 0.87962566103423978f;
        return scaled(random::truncated_normal(key, -2.0f, 2.0f, n, mode), stddev);
      }
      case Distribution::kNormal: return scaled(random::normal(key, n, mode), std::sqrt(variance));
      case Distribution::kUniform:
        return scaled(random::uniform(key, n, -1.0f, 1.0f, mode), std::sqrt(3.0f * variance));
    }
    return std::vector<float>{};
  };
}

Initializer lecun_normal() { return variance_scaling(1.0, FanMode::kFanIn, Distribution::kTruncatedNormal); }
Initializer lecun_uniform() { return variance_scaling(1.0, FanMode::kFanIn, Distribution::kUniform); }
Initializer glorot_normal() { return variance_scaling(1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal); }
Initializer glorot_uniform() { return variance_scaling(1.0, FanMode::kFanAvg, Distribution::kUniform); }
Initializer he_normal() { return variance_scaling(2.0, FanMode::kFanIn, Distribution::kTruncatedNormal); }
Initializer he_uniform() { return variance_scaling(2.0, FanMode::kFanIn, Distribution::kUniform); }

}  // namespace rematkit::flax
