#include "rematkit/random/samplers.hpp"

#include <cmath>

#include "parallel_draw.hpp"
#include "rematkit/random/xla_math.hpp"
#include "sampler_lanes.hpp"

namespace rematkit::random {

// Each sampler's element formula is parallel_draw.cpp's transform of its kind, in sampler_lanes.hpp.

ElementTransform uniform_transform(float minval, float maxval) {
  // max(minval, fma(unit, maxval - minval, minval)), unit in [0, 1) from 23 mantissa bits.
  return {ElementTransform::Kind::kUniform, minval, maxval - minval};
}

ElementTransform normal_transform() {
  // sqrt(2) * erf_inv(uniform(-1 + ulp, 1)).
  const float minval = std::nextafter(-1.0f, 0.0f);
  return {ElementTransform::Kind::kNormal, minval, 1.0f - minval};
}

ElementTransform truncated_normal_transform(float lower, float upper) {
  // clamp(sqrt(2) * erf_inv(uniform(erf(lower / sqrt(2)), erf(upper / sqrt(2)))), lower + ulp, upper - ulp).
  const float a = xla_erf(lower / lanes::kSqrt2);
  const float b = xla_erf(upper / lanes::kSqrt2);
  return {ElementTransform::Kind::kTruncatedNormal, a, b - a, std::nextafter(lower, INFINITY), std::nextafter(upper, -INFINITY)};
}

std::vector<float> uniform(const Key& key, uint64_t n, float minval, float maxval, PrngMode mode) {
  return draw(key, n, mode, uniform_transform(minval, maxval));
}

std::vector<float> normal(const Key& key, uint64_t n, PrngMode mode) { return draw(key, n, mode, normal_transform()); }

std::vector<float> truncated_normal(const Key& key, float lower, float upper, uint64_t n, PrngMode mode) {
  return draw(key, n, mode, truncated_normal_transform(lower, upper));
}

std::vector<bool> bernoulli(const Key& key, float p, uint64_t n, PrngMode mode) {
  const std::vector<float> u = uniform(key, n, 0.0f, 1.0f, mode);
  std::vector<bool> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = u[i] < p;
  return out;
}

}  // namespace rematkit::random
