// jax.random's bits and fold_in on threefry keys, as the reference backend computes them
// (framework/src/reference/random.cpp: jax/_src/random/prng.py with jax_threefry_partitionable):
// element i of a key's bits hashes the 64-bit index i as (high word, low word). random_bits hashes
// a vector of consecutive indices at once (one lane each; the rounds are adds, rotates and xors on
// u32 lanes), compiled for every Highway target; fold_in, one block per key, stays scalar. The
// same bits as the reference's scalar threefry2x32_block (plugin/threefry2x32.hpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "highway/random_bits.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>

#include "highway/kernels.hpp"
#include "rematkit/plugin/threefry2x32.hpp"

HWY_BEFORE_NAMESPACE();
namespace rematkit::hwy_backend {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Four rounds with the rotations R0..R3 (a left rotation by r is a right one by 32 - r).
template <int R0, int R1, int R2, int R3, class V>
HWY_INLINE void four_rounds(V& x0, V& x1) {
  x0 = hn::Add(x0, x1), x1 = hn::Xor(hn::RotateRight<32 - R0>(x1), x0);
  x0 = hn::Add(x0, x1), x1 = hn::Xor(hn::RotateRight<32 - R1>(x1), x0);
  x0 = hn::Add(x0, x1), x1 = hn::Xor(hn::RotateRight<32 - R2>(x1), x0);
  x0 = hn::Add(x0, x1), x1 = hn::Xor(hn::RotateRight<32 - R3>(x1), x0);
}

// Threefry-2x32-20 of (x0, x1) per lane under one key: threefry2x32_block's rounds and injections.
template <class D, class V>
HWY_INLINE V threefry_xor(D d, uint32_t key0, uint32_t key1, V x0, V x1) {
  const uint32_t ks[3] = {key0, key1, key0 ^ key1 ^ 0x1BD11BDAu};
  x0 = hn::Add(x0, hn::Set(d, ks[0]));
  x1 = hn::Add(x1, hn::Set(d, ks[1]));
  auto inject = [&](uint32_t group) {
    x0 = hn::Add(x0, hn::Set(d, ks[group % 3]));
    x1 = hn::Add(x1, hn::Set(d, ks[(group + 1) % 3] + group));
  };
  four_rounds<13, 15, 26, 6>(x0, x1), inject(1);
  four_rounds<17, 29, 16, 24>(x0, x1), inject(2);
  four_rounds<13, 15, 26, 6>(x0, x1), inject(3);
  four_rounds<17, 29, 16, 24>(x0, x1), inject(4);
  four_rounds<13, 15, 26, 6>(x0, x1), inject(5);
  return hn::Xor(x0, x1);
}

void RandomBitsImpl(const uint32_t* keys, size_t num_keys, size_t per_key, bool low_byte, void* out) {
  const hn::ScalableTag<uint32_t> d;
  const size_t lanes = hn::Lanes(d);
  HWY_ALIGN uint32_t words[hn::MaxLanes(d)];
  for (size_t k = 0; k < num_keys; ++k) {
    const uint32_t k0 = keys[2 * k], k1 = keys[2 * k + 1];
    for (size_t i = 0; i < per_key; i += lanes) {
      const size_t n = std::min(lanes, per_key - i);
      // Lanes i..i+lanes-1 share the index's high word unless they cross a multiple of 2^32.
      if ((uint64_t{i} >> 32) != (uint64_t{i + lanes - 1} >> 32)) {
        for (size_t j = 0; j < n; ++j) {
          const auto y = plugin::threefry2x32_block(k0, k1, static_cast<uint32_t>(uint64_t{i + j} >> 32),
                                                    static_cast<uint32_t>(i + j));
          words[j] = y[0] ^ y[1];
        }
      } else {
        const auto hi = hn::Set(d, static_cast<uint32_t>(uint64_t{i} >> 32));
        const auto lo = hn::Iota(d, static_cast<uint32_t>(i));
        hn::Store(threefry_xor(d, k0, k1, hi, lo), d, words);
      }
      if (low_byte) {
        uint8_t* y = static_cast<uint8_t*>(out) + k * per_key + i;
        for (size_t j = 0; j < n; ++j) y[j] = static_cast<uint8_t>(words[j]);
      } else {
        uint32_t* y = static_cast<uint32_t*>(out) + k * per_key + i;
        for (size_t j = 0; j < n; ++j) y[j] = words[j];
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rematkit::hwy_backend {

HWY_EXPORT(RandomBitsImpl);

void random_bits(const uint32_t* keys, size_t num_keys, size_t per_key, bool low_byte, void* out) {
  (void)chosen_target();  // chooses the target before the table is read below
  HWY_DYNAMIC_DISPATCH(RandomBitsImpl)(keys, num_keys, per_key, low_byte, out);
}

void random_fold_in(const uint32_t* keys, const uint32_t* data, bool scalar_data, size_t n, uint32_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const auto y = plugin::threefry2x32_block(keys[2 * i], keys[2 * i + 1], 0u, data[scalar_data ? 0 : i]);
    out[2 * i] = y[0];
    out[2 * i + 1] = y[1];
  }
}

}  // namespace rematkit::hwy_backend
#endif
