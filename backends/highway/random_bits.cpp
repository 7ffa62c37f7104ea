// jax.random's bits and fold_in on threefry keys, as the reference backend computes them
// (framework/reference_math/src/random.cpp: jax/_src/random/prng.py with jax_threefry_partitionable):
// element i of a key's bits hashes the 64-bit index i as (high word, low word). random_bits hashes
// four vectors of consecutive indices at once (one lane each; the rounds are adds, rotates and xors
// on u32 lanes), compiled for every Highway target; fold_in, one block per key, stays scalar. The
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

// Threefry-2x32-20 of (x0[j], x1[j]) per lane under one key, for kChains independent vectors at
// once: threefry2x32_block's rounds and injections, the chains interleaved so that one's latency
// hides behind the others' (a round's add, rotate and xor depend on each other).
constexpr size_t kChains = 4;

template <int R, class V>
HWY_INLINE void round_of(V (&x0)[kChains], V (&x1)[kChains]) {
  for (size_t j = 0; j < kChains; ++j) {
    x0[j] = hn::Add(x0[j], x1[j]);
    x1[j] = hn::Xor(hn::RotateRight<32 - R>(x1[j]), x0[j]);  // a left rotation by R
  }
}

template <class D, class V>
HWY_INLINE void threefry_xor(D d, uint32_t key0, uint32_t key1, V (&x0)[kChains], V (&x1)[kChains]) {
  const uint32_t ks[3] = {key0, key1, key0 ^ key1 ^ 0x1BD11BDAu};
  auto inject = [&](uint32_t group) {
    const V a = hn::Set(d, ks[group % 3]), b = hn::Set(d, ks[(group + 1) % 3] + group);
    for (size_t j = 0; j < kChains; ++j) x0[j] = hn::Add(x0[j], a), x1[j] = hn::Add(x1[j], b);
  };
  inject(0);
  for (uint32_t group = 1; group <= 5; ++group) {
    if (group % 2) round_of<13>(x0, x1), round_of<15>(x0, x1), round_of<26>(x0, x1), round_of<6>(x0, x1);
    else round_of<17>(x0, x1), round_of<29>(x0, x1), round_of<16>(x0, x1), round_of<24>(x0, x1);
    inject(group);
  }
  for (size_t j = 0; j < kChains; ++j) x0[j] = hn::Xor(x0[j], x1[j]);
}

// Words [begin, end) of one key's bits, into `out` from word `begin` on (a word's bits depend on
// its index alone, so any piece gives the bits of the whole).
void RandomBitsImpl(const uint32_t* key, size_t begin, size_t end, bool low_byte, void* out) {
  const hn::ScalableTag<uint32_t> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d), block = kChains * lanes;
  HWY_ALIGN uint32_t words[kChains * hn::MaxLanes(d)];
  const uint32_t k0 = key[0], k1 = key[1];
  for (size_t i = begin; i < end; i += block) {
    const size_t n = std::min(block, end - i);
    // The block's indices share their high word unless they cross a multiple of 2^32.
    if ((uint64_t{i} >> 32) != (uint64_t{i + block - 1} >> 32)) {
      for (size_t j = 0; j < n; ++j) {
        const auto y = plugin::threefry2x32_block(k0, k1, static_cast<uint32_t>(uint64_t{i + j} >> 32),
                                                  static_cast<uint32_t>(i + j));
        words[j] = y[0] ^ y[1];
      }
    } else {
      V x0[kChains], x1[kChains];
      for (size_t j = 0; j < kChains; ++j) {
        x0[j] = hn::Set(d, static_cast<uint32_t>(uint64_t{i} >> 32));
        x1[j] = hn::Iota(d, static_cast<uint32_t>(i + j * lanes));
      }
      threefry_xor(d, k0, k1, x0, x1);
      uint32_t* y = static_cast<uint32_t*>(out) + (i - begin);
      if (!low_byte && n == block) {  // whole vectors straight to the output
        for (size_t j = 0; j < kChains; ++j) hn::StoreU(x0[j], d, y + j * lanes);
        continue;
      }
      for (size_t j = 0; j < kChains; ++j) hn::Store(x0[j], d, words + j * lanes);
    }
    if (low_byte) {
      uint8_t* y = static_cast<uint8_t*>(out) + (i - begin);
      for (size_t j = 0; j < n; ++j) y[j] = static_cast<uint8_t>(words[j]);
    } else {
      uint32_t* y = static_cast<uint32_t*>(out) + (i - begin);
      for (size_t j = 0; j < n; ++j) y[j] = words[j];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace rematkit::hwy_backend
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <tbb/parallel_for.h>

namespace rematkit::hwy_backend {

HWY_EXPORT(RandomBitsImpl);

void random_bits(const uint32_t* keys, size_t num_keys, size_t per_key, bool low_byte, void* out) {
  (void)chosen_target();  // chooses the target before the table is read below
  auto* fn = &HWY_DYNAMIC_DISPATCH(RandomBitsImpl);
  // Each word depends only on its key and index: chunks of a key's words on oneTBB, from a size
  // where a second thread pays.
  constexpr size_t kChunk = size_t{1} << 14, kParallelFrom = size_t{1} << 16;
  const size_t width = low_byte ? 1 : sizeof(uint32_t);
  auto piece = [&](size_t k, size_t begin, size_t end) {
    fn(keys + 2 * k, begin, end, low_byte, static_cast<char*>(out) + (k * per_key + begin) * width);
  };
  if (num_keys * per_key < kParallelFrom) {
    for (size_t k = 0; k < num_keys; ++k) piece(k, 0, per_key);
    return;
  }
  const size_t chunks = (per_key + kChunk - 1) / kChunk;
  tbb::parallel_for(size_t{0}, num_keys * chunks, [&](size_t c) {
    const size_t k = c / chunks, begin = c % chunks * kChunk;
    piece(k, begin, std::min(per_key, begin + kChunk));
  });
}

void random_bits_piece(const uint32_t* key, size_t begin, size_t n, uint32_t* out) {
  (void)chosen_target();
  HWY_DYNAMIC_DISPATCH(RandomBitsImpl)(key, begin, begin + n, false, out);
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
