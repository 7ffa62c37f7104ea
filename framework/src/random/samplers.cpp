#include "rematkit/random/samplers.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "rematkit/random/xla_math.hpp"

namespace rematkit::random {
namespace {

constexpr float kSqrt2 = 1.41421356237309504880f;  // float32(sqrt(2)) = 1.4142135381698608

}  // namespace

std::vector<float> uniform(const Key& key, uint64_t n, float minval, float maxval, PrngMode mode) {
  const std::vector<uint32_t> bits = random_bits(key, n, mode);
  const float span = maxval - minval;
  std::vector<float> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    // 23 random mantissa bits under exponent 0 give [1, 2); subtracting 1 is exact.
    const float unit = std::bit_cast<float>((bits[i] >> 9) | 0x3F800000u) - 1.0f;
    out[i] = std::max(minval, std::fmaf(unit, span, minval));
  }
  return out;
}

std::vector<float> normal(const Key& key, uint64_t n, PrngMode mode) {
  std::vector<float> u = uniform(key, n, std::nextafter(-1.0f, 0.0f), 1.0f, mode);
  for (float& v : u) v = kSqrt2 * xla_erf_inv(v);
  return u;
}

std::vector<float> truncated_normal(const Key& key, float lower, float upper, uint64_t n, PrngMode mode) {
  const float a = xla_erf(lower / kSqrt2);
  const float b = xla_erf(upper / kSqrt2);
  const float lo = std::nextafter(lower, INFINITY);
  const float hi = std::nextafter(upper, -INFINITY);
  std::vector<float> u = uniform(key, n, a, b, mode);
  for (float& v : u) v = std::clamp(kSqrt2 * xla_erf_inv(v), lo, hi);
  return u;
}

std::vector<bool> bernoulli(const Key& key, float p, uint64_t n, PrngMode mode) {
  const std::vector<float> u = uniform(key, n, 0.0f, 1.0f, mode);
  std::vector<bool> out(n);
  for (uint64_t i = 0; i < n; ++i) out[i] = u[i] < p;
  return out;
}

}  // namespace rematkit::random
