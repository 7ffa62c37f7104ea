// Compiled with -ffp-contract=off (framework/CMakeLists.txt): the only fused multiply-adds are the
// std::fmaf calls, which an FMA instruction and libm's fmaf both round once, so every clone below
// gives the scalar code's bits. -fno-math-errno and -fno-trapping-math let sqrt and the selects
// vectorize; they change errno and the floating-point exception flags alone, never a value.
#include "parallel_draw.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstddef>

#include "present_pages.hpp"
#include "rematkit/plugin/threefry2x32.hpp"
#include "sampler_lanes.hpp"

namespace rematkit::random {
namespace {

// Elements per block: its bits (16 KiB) stay in L1 between the hash and the transform. A power of
// two, so that no block straddles a multiple of 2^32 and its counters share one high word.
constexpr uint64_t kBlock = 4096;

struct BlockJob {
  Key key;
  uint64_t n;
  PrngMode mode;
  ElementTransform transform;
};

// Two threefry2x32_20 blocks (rematkit/plugin/threefry2x32.hpp) with their rounds interleaved:
// one block's rounds are a chain of dependent adds, rotates and xors that leaves most of the
// vector units idle, so each step of one block is written beside the same step of the other.
[[gnu::always_inline]] inline void threefry2x32_pair(const uint32_t (&ks)[3], uint32_t& a0, uint32_t& a1, uint32_t& b0,
                                                    uint32_t& b1) {
  constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  a0 += ks[0], a1 += ks[1], b0 += ks[0], b1 += ks[1];
  for (uint32_t group = 1; group <= 5; ++group) {
    for (int r : kRotations[(group - 1) % 2]) {
      a0 += a1;
      b0 += b1;
      a1 = ((a1 << r) | (a1 >> (32 - r))) ^ a0;
      b1 = ((b1 << r) | (b1 >> (32 - r))) ^ b0;
    }
    a0 += ks[group % 3], b0 += ks[group % 3];
    a1 += ks[(group + 1) % 3] + group, b1 += ks[(group + 1) % 3] + group;
  }
}

// kPartitionable (threefry.cpp's random_bits): element i hashes (i >> 32, i mod 2^32), then xors
// the two words. The block's two halves are hashed side by side (an odd last element alone).
[[gnu::always_inline]] inline void partitionable_bits(const Key& key, uint64_t first, size_t count, uint32_t* bits) {
  const uint32_t high = static_cast<uint32_t>(first >> 32);
  const uint32_t low = static_cast<uint32_t>(first);
  const uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  const size_t half = count / 2;
  uint32_t* __restrict front = bits;
  uint32_t* __restrict back = bits + half;
  for (size_t j = 0; j < half; ++j) {
    uint32_t a0 = high, a1 = low + static_cast<uint32_t>(j), b0 = high, b1 = low + static_cast<uint32_t>(half + j);
    threefry2x32_pair(ks, a0, a1, b0, b1);
    front[j] = a0 ^ a1;
    back[j] = b0 ^ b1;
  }
  if (count % 2) {
    const std::array<uint32_t, 2> b = plugin::threefry2x32_block(key[0], key[1], high, low + static_cast<uint32_t>(count - 1));
    bits[count - 1] = b[0] ^ b[1];
  }
}

// kLegacy (threefry.cpp's threefry_2x32 on the iota, padded with a 0 to even length): element i is
// the first word of the pair (i, half + i), or past half the second word of (i - half, i).
[[gnu::always_inline]] inline void legacy_bits(const Key& key, uint64_t n, uint64_t first, size_t count, uint32_t* bits) {
  const uint64_t half = (n + 1) / 2;
  for (size_t j = 0; j < count; ++j) {
    const uint64_t i = first + j;
    if (i < half) {
      const uint32_t partner = half + i < n ? static_cast<uint32_t>(half + i) : 0u;
      bits[j] = plugin::threefry2x32_block(key[0], key[1], static_cast<uint32_t>(i), partner)[0];
    } else {
      bits[j] = plugin::threefry2x32_block(key[0], key[1], static_cast<uint32_t>(i - half), static_cast<uint32_t>(i))[1];
    }
  }
}

// samplers.cpp's formulas, one loop per kind so that each loop is straight-line code.
[[gnu::always_inline]] inline void transform_bits(const ElementTransform& t, const uint32_t* __restrict bits, size_t count,
                                                  float* __restrict out) {
  const float minval = t.minval, span = t.span, lo = t.lo, hi = t.hi;
  switch (t.kind) {
    case ElementTransform::Kind::kUniform:
      for (size_t j = 0; j < count; ++j) out[j] = lanes::uniform(bits[j], minval, span);
      return;
    case ElementTransform::Kind::kNormal:
      for (size_t j = 0; j < count; ++j) out[j] = lanes::kSqrt2 * lanes::erf_inv(lanes::uniform(bits[j], minval, span));
      return;
    case ElementTransform::Kind::kTruncatedNormal:
      for (size_t j = 0; j < count; ++j)
        out[j] = std::clamp(lanes::kSqrt2 * lanes::erf_inv(lanes::uniform(bits[j], minval, span)), lo, hi);
      return;
  }
}

[[gnu::always_inline]] inline void draw_block_body(const BlockJob& job, uint64_t first, size_t count, float* out) {
  alignas(64) uint32_t bits[kBlock];
  if (job.mode == PrngMode::kPartitionable)
    partitionable_bits(job.key, first, count, bits);
  else
    legacy_bits(job.key, job.n, first, count, bits);
  transform_bits(job.transform, bits, count, out);
  // The initializers' `values * factor` (initializers.cpp), on the block while it is in L1.
  const float scale = job.transform.scale;
  if (scale != 1.0f)
    for (size_t j = 0; j < count; ++j) out[j] = out[j] * scale;
}

using DrawBlock = void (*)(const BlockJob&, uint64_t, size_t, float*);

void draw_block_baseline(const BlockJob& job, uint64_t first, size_t count, float* out) {
  draw_block_body(job, first, count, out);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same body compiled again for AVX2 with FMA, chosen once at run time (the pattern of
// bench/peak_probe_bench.cpp and backends/blas/blas_core.cpp). No AVX-512 clone: no machine the
// tests run on has AVX-512 to check its bits.
__attribute__((target("avx2,fma"))) void draw_block_avx2(const BlockJob& job, uint64_t first, size_t count, float* out) {
  draw_block_body(job, first, count, out);
}
#endif

DrawBlock draw_block_for_this_cpu() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return draw_block_avx2;
#endif
  return draw_block_baseline;
}

}  // namespace

namespace {

// `per_block(first, count)` for every block of n elements, the blocks split over oneTBB's threads.
template <class PerBlock>
void for_each_block(uint64_t n, const PerBlock& per_block) {
  auto blocks_in = [&](uint64_t begin, uint64_t end) {
    for (uint64_t b = begin; b < end; ++b) {
      const uint64_t first = b * kBlock;
      per_block(first, static_cast<size_t>(std::min(kBlock, n - first)));
    }
  };
  const uint64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) {
    blocks_in(0, blocks);
  } else {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, blocks),
                      [&](const tbb::blocked_range<uint64_t>& r) { blocks_in(r.begin(), r.end()); });
  }
}

std::vector<float> draw_with(DrawBlock draw_block, const Key& key, uint64_t n, PrngMode mode,
                             const ElementTransform& transform) {
  const BlockJob job{key, n, mode, transform};
  std::vector<float> out = with_present_pages<float>(n);
  for_each_block(n, [&](uint64_t first, size_t count) { draw_block(job, first, count, out.data() + first); });
  return out;
}

DrawBlock this_cpus_draw_block() {
  static const DrawBlock draw_block = draw_block_for_this_cpu();
  return draw_block;
}

}  // namespace

std::vector<float> draw(const Key& key, uint64_t n, PrngMode mode, const ElementTransform& transform) {
  return draw_with(this_cpus_draw_block(), key, n, mode, transform);
}

void draw_blocks(const Key& key, uint64_t n, PrngMode mode, const ElementTransform& transform, const BlockSink& sink) {
  const BlockJob job{key, n, mode, transform};
  const DrawBlock draw_block = this_cpus_draw_block();
  for_each_block(n, [&](uint64_t first, size_t count) {
    alignas(64) float values[kBlock];
    draw_block(job, first, count, values);
    sink(first, values, count);
  });
}

std::vector<float> draw_on_baseline(const Key& key, uint64_t n, PrngMode mode, const ElementTransform& transform) {
  return draw_with(draw_block_baseline, key, n, mode, transform);
}

}  // namespace rematkit::random
