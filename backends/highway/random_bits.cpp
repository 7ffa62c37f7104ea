// jax.random's bits and fold_in on threefry keys, as the reference backend computes them
// (framework/src/reference/random.cpp: jax/_src/random/prng.py with jax_threefry_partitionable):
// element i of a key's bits hashes the 64-bit index i as (high word, low word). Plain loops over the
// lanes of one key, which the compiler unrolls; the same bits as the reference by construction.
#include "highway/kernels.hpp"

#include "rematkit/plugin/threefry2x32.hpp"

namespace rematkit::hwy_backend {

void random_bits(const uint32_t* keys, size_t num_keys, size_t per_key, bool low_byte, void* out) {
  for (size_t k = 0; k < num_keys; ++k) {
    const uint32_t k0 = keys[2 * k], k1 = keys[2 * k + 1];
    for (size_t i = 0; i < per_key; ++i) {
      const auto y = plugin::threefry2x32_block(k0, k1, static_cast<uint32_t>(uint64_t{i} >> 32), static_cast<uint32_t>(i));
      const uint32_t word = y[0] ^ y[1];
      if (low_byte) static_cast<uint8_t*>(out)[k * per_key + i] = static_cast<uint8_t>(word);
      else static_cast<uint32_t*>(out)[k * per_key + i] = word;
    }
  }
}

void random_fold_in(const uint32_t* keys, const uint32_t* data, bool scalar_data, size_t n, uint32_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const auto y = plugin::threefry2x32_block(keys[2 * i], keys[2 * i + 1], 0u, data[scalar_data ? 0 : i]);
    out[2 * i] = y[0];
    out[2 * i + 1] = y[1];
  }
}

}  // namespace rematkit::hwy_backend
