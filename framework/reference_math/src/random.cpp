// jax.random's primitives on threefry keys (jax/_src/random/prng.py, threefry2x32.py). Counters are
// laid out as jax_threefry_partitionable=True lays them out, JAX's default since 0.5.0: element i
// of a split or of random bits hashes the 64-bit index i as (high word, low word), so every element
// depends only on its key and its index.
#include <cstdint>

#include "loops.hpp"
#include "rematkit/plugin/threefry2x32.hpp"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit::reference {
namespace {

using plugin::threefry2x32_block;

std::array<uint32_t, 2> hash(double key, uint32_t x0, uint32_t x1) {
  return threefry2x32_block(key_word(key, 0), key_word(key, 1), x0, x1);
}

std::array<uint32_t, 2> hash_index(double key, uint64_t i) {
  return hash(key, static_cast<uint32_t>(i >> 32), static_cast<uint32_t>(i));
}

}  // namespace

// prng.py threefry_seed: a 64-bit seed gives [high word, low word]; a narrower one [0, its bits]
// (its shift right by 32 is 0).
void random_seed(const Input& seed, const Output& out) {
  const IntegerFormat f = integer_format(seed.dtype);
  for (size_t i = 0; i < out.data.size(); ++i) {
    const uint64_t bits = integer_bits(seed.data[i], f);
    out.data[i] = key_element(f.bits == 64 ? static_cast<uint32_t>(bits >> 32) : 0u, static_cast<uint32_t>(bits));
  }
}

void random_wrap(const Input& words, const Output& out) {
  for (size_t i = 0; i < out.data.size(); ++i)
    out.data[i] = key_element(static_cast<uint32_t>(words.data[2 * i]), static_cast<uint32_t>(words.data[2 * i + 1]));
}

void random_unwrap(const Input& keys, const Output& out) {
  for (size_t i = 0; i < keys.data.size(); ++i) {
    out.data[2 * i] = key_word(keys.data[i], 0);
    out.data[2 * i + 1] = key_word(keys.data[i], 1);
  }
}

// _threefry_split_foldlike: new key j of each key is the hash of (hi32(j), lo32(j)).
void random_split(const Dims& shape, const Input& keys, const Output& out) {
  const int64_t n = count(shape);
  for (size_t k = 0; k < keys.data.size(); ++k)
    for (int64_t j = 0; j < n; ++j) {
      const auto y = hash_index(keys.data[k], static_cast<uint64_t>(j));
      out.data[k * static_cast<size_t>(n) + static_cast<size_t>(j)] = key_element(y[0], y[1]);
    }
}

// threefry_fold_in: the hash of (0, data).
void random_fold_in(const Input& keys, const Input& data, const Output& out) {
  map_binary(keys, data, out, [](double key, double d) {
    const auto y = hash(key, 0u, static_cast<uint32_t>(d));
    return key_element(y[0], y[1]);
  });
}

// _threefry_random_bits_partitionable: element i is the xor of the hash of (hi32(i), lo32(i));
// 8-bit bits keep its low byte.
void random_bits(int64_t bit_width, const Dims& shape, const Input& keys, const Output& out) {
  const int64_t n = count(shape);
  for (size_t k = 0; k < keys.data.size(); ++k)
    for (int64_t i = 0; i < n; ++i) {
      const auto y = hash_index(keys.data[k], static_cast<uint64_t>(i));
      const uint32_t word = y[0] ^ y[1];
      out.data[k * static_cast<size_t>(n) + static_cast<size_t>(i)] = bit_width == 8 ? (word & 0xFFu) : word;
    }
}

// The hash of (x1, x2) under (k1, k2), its operands broadcast as lax's elementwise ops are.
void threefry2x32(int64_t output, std::span<const Input> in, const Output& out) {
  Dims strides[4];
  for (size_t a = 0; a < 4; ++a) strides[a] = strides_of(in[a].shape);
  for (int64_t i = 0; i < static_cast<int64_t>(out.data.size()); ++i) {
    uint32_t v[4];
    for (size_t a = 0; a < 4; ++a) {
      const bool full = count(in[a].shape) == static_cast<int64_t>(out.data.size());
      v[a] = static_cast<uint32_t>(in[a].data[full ? i : broadcast_index(in[a].shape, strides[a], out.shape, i)]);
    }
    out.data[i] = threefry2x32_block(v[0], v[1], v[2], v[3])[output == 0 ? 0 : 1];
  }
}

}  // namespace rematkit::reference
