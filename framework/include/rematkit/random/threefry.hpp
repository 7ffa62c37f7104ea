// jax.random's key layer: threefry2x32 (Random123's threefry2x32_20), PRNGKey, fold_in, split and
// 32-bit random bits, in both of JAX's counter layouts (reference/flax-init.md section 1).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "rematkit/flax/export.hpp"

namespace rematkit::random {

using Key = std::array<uint32_t, 2>;
using Block = std::array<uint32_t, 2>;

// How random bits and split derive counters: `kPartitionable` (jax_threefry_partitionable=True,
// the default since JAX 0.5.0) hashes each flat index on its own; `kLegacy` (JAX <= 0.4.38) hashes
// the iota in two halves.
enum class PrngMode { kPartitionable, kLegacy };

// One threefry2x32 block: 20 rounds of `counter` under `key`.
REMATKIT_FLAX_EXPORT Block threefry2x32(const Key& key, const Block& counter);

// JAX's threefry_2x32 on an array of counters: pads to even length, hashes (first half, second
// half) pairs, and returns the two output halves concatenated.
REMATKIT_FLAX_EXPORT std::vector<uint32_t> threefry_2x32(const Key& key, const std::vector<uint32_t>& counters);

// jax.random.PRNGKey(seed) with x64 off: the seed is narrowed to 32 bits, giving [0, seed mod 2^32].
REMATKIT_FLAX_EXPORT Key prng_key(uint64_t seed);
// jax.random.fold_in(key, data): threefry2x32(key, (0, data)); the same in both modes.
REMATKIT_FLAX_EXPORT Key fold_in(const Key& key, uint32_t data);
// jax.random.split(key, num).
REMATKIT_FLAX_EXPORT std::vector<Key> split(const Key& key, uint64_t num, PrngMode mode);
// jax.random.bits(key, (n,), uint32): the row-major flat array of n 32-bit words.
REMATKIT_FLAX_EXPORT std::vector<uint32_t> random_bits(const Key& key, uint64_t n, PrngMode mode);

}  // namespace rematkit::random
