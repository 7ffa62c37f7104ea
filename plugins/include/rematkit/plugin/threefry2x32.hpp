// Threefry-2x32 with 20 rounds (Random123's threefry2x32_20), the hash behind JAX's "fry" keys:
// jax/_src/random/threefry2x32.py. Shared by the reference math (the random_* primitives),
// rematkit::flax's jax.random layer and the backends that run random_bits (header-only, in the SDK).
#pragma once
#include <array>
#include <cstdint>

namespace rematkit::plugin {

inline std::array<uint32_t, 2> threefry2x32_block(uint32_t key0, uint32_t key1, uint32_t x0, uint32_t x1) {
  constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {key0, key1, key0 ^ key1 ^ 0x1BD11BDAu};
  x0 += ks[0];
  x1 += ks[1];
  // Five groups of four rounds; a key injection after each group.
  for (uint32_t group = 1; group <= 5; ++group) {
    for (int r : kRotations[(group - 1) % 2]) {
      x0 += x1;
      x1 = ((x1 << r) | (x1 >> (32 - r))) ^ x0;
    }
    x0 += ks[group % 3];
    x1 += ks[(group + 1) % 3] + group;
  }
  return {x0, x1};
}

}  // namespace rematkit::plugin
