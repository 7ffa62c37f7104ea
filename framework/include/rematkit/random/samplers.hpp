// jax.random's float32 samplers on top of random_bits (reference/flax-init.md section 2).
#pragma once

#include <cstdint>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit::random {

// uniform(key, (n,), minval, maxval): 23 random mantissa bits scaled into [minval, maxval).
REMATKIT_FLAX_EXPORT std::vector<float> uniform(const Key& key, uint64_t n, float minval, float maxval, PrngMode mode);
// normal(key, (n,)): sqrt(2) * erf_inv(uniform(-1 + ulp, 1)).
REMATKIT_FLAX_EXPORT std::vector<float> normal(const Key& key, uint64_t n, PrngMode mode);
// truncated_normal(key, lower, upper, (n,)): inverse-CDF sampling of N(0, 1) on (lower, upper).
REMATKIT_FLAX_EXPORT std::vector<float> truncated_normal(const Key& key, float lower, float upper, uint64_t n, PrngMode mode);
// bernoulli(key, p, (n,)): uniform < p.
REMATKIT_FLAX_EXPORT std::vector<bool> bernoulli(const Key& key, float p, uint64_t n, PrngMode mode);

}  // namespace rematkit::random
