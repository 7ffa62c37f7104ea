#include "rematkit/random/threefry.hpp"

#include <cstddef>

#include "rematkit/plugin/threefry2x32.hpp"

namespace rematkit::random {

Block threefry2x32(const Key& key, const Block& counter) {
  return plugin::threefry2x32_block(key[0], key[1], counter[0], counter[1]);
}

std::vector<uint32_t> threefry_2x32(const Key& key, const std::vector<uint32_t>& counters) {
  std::vector<uint32_t> padded = counters;
  if (padded.size() % 2) padded.push_back(0);
  const size_t half = padded.size() / 2;
  std::vector<uint32_t> out(padded.size());
  for (size_t i = 0; i < half; ++i) {
    const Block y = threefry2x32(key, {padded[i], padded[half + i]});
    out[i] = y[0];
    out[half + i] = y[1];
  }
  out.resize(counters.size());
  return out;
}

Key prng_key(uint64_t seed) { return {0u, static_cast<uint32_t>(seed)}; }

Key fold_in(const Key& key, uint32_t data) { return threefry2x32(key, {0u, data}); }

std::vector<Key> split(const Key& key, uint64_t num, PrngMode mode) {
  std::vector<Key> keys(num);
  if (mode == PrngMode::kPartitionable) {
    for (uint64_t i = 0; i < num; ++i)
      keys[i] = threefry2x32(key, {static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(i)});
    return keys;
  }
  std::vector<uint32_t> iota(2 * num);
  for (uint64_t i = 0; i < 2 * num; ++i) iota[i] = static_cast<uint32_t>(i);
  const std::vector<uint32_t> words = threefry_2x32(key, iota);
  for (uint64_t i = 0; i < num; ++i) keys[i] = {words[2 * i], words[2 * i + 1]};
  return keys;
}

std::vector<uint32_t> random_bits(const Key& key, uint64_t n, PrngMode mode) {
  if (mode == PrngMode::kLegacy) {
    std::vector<uint32_t> iota(n);
    for (uint64_t i = 0; i < n; ++i) iota[i] = static_cast<uint32_t>(i);
    return threefry_2x32(key, iota);
  }
  std::vector<uint32_t> bits(n);
  for (uint64_t i = 0; i < n; ++i) {
    const Block b = threefry2x32(key, {static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(i)});
    bits[i] = b[0] ^ b[1];
  }
  return bits;
}

}  // namespace rematkit::random
