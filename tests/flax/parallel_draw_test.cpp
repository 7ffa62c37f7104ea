// The samplers drawn in blocks over threads and vectorized (framework/src/random/parallel_draw.cpp)
// give the bits of the straightforward scalar code: random_bits, then xla_math.cpp's functions one
// element at a time, as samplers.cpp wrote them before. For every size (ragged blocks, blocks that
// split unevenly over threads), both counter layouts, one thread and two.
#include <gtest/gtest.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "../../framework/src/random/parallel_draw.hpp"  // draw_on_baseline
#include "../../framework/src/random/sampler_lanes.hpp"  // header-only; checked against xla_math.cpp below
#include "rematkit/random/samplers.hpp"
#include "rematkit/random/xla_math.hpp"

namespace rematkit::random {
namespace {

constexpr float kSqrt2 = 1.41421356237309504880f;

float scalar_uniform(uint32_t bits, float minval, float maxval) {
  const float unit = std::bit_cast<float>((bits >> 9) | 0x3F800000u) - 1.0f;
  return std::max(minval, std::fmaf(unit, maxval - minval, minval));
}

std::vector<float> reference_uniform(const Key& key, uint64_t n, float minval, float maxval, PrngMode mode) {
  std::vector<float> out;
  for (uint32_t b : random_bits(key, n, mode)) out.push_back(scalar_uniform(b, minval, maxval));
  return out;
}

std::vector<float> reference_normal(const Key& key, uint64_t n, PrngMode mode) {
  std::vector<float> u = reference_uniform(key, n, std::nextafter(-1.0f, 0.0f), 1.0f, mode);
  for (float& v : u) v = kSqrt2 * xla_erf_inv(v);
  return u;
}

std::vector<float> reference_truncated_normal(const Key& key, float lower, float upper, uint64_t n, PrngMode mode) {
  const float a = xla_erf(lower / kSqrt2), b = xla_erf(upper / kSqrt2);
  const float lo = std::nextafter(lower, INFINITY), hi = std::nextafter(upper, -INFINITY);
  std::vector<float> u = reference_uniform(key, n, a, b, mode);
  for (float& v : u) v = std::clamp(kSqrt2 * xla_erf_inv(v), lo, hi);
  return u;
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> bits;
  for (float f : v) bits.push_back(std::bit_cast<uint32_t>(f));
  return bits;
}

// The three samplers against their references, on `threads` threads.
void expect_scalar_bits(const Key& key, uint64_t n, PrngMode mode, int threads) {
  SCOPED_TRACE("n " + std::to_string(n) + ", threads " + std::to_string(threads) +
               (mode == PrngMode::kLegacy ? ", legacy" : ", partitionable"));
  tbb::task_arena arena(threads);
  arena.execute([&] {
    EXPECT_EQ(bits_of(uniform(key, n, -3.0f, 5.0f, mode)), bits_of(reference_uniform(key, n, -3.0f, 5.0f, mode)));
    EXPECT_EQ(bits_of(normal(key, n, mode)), bits_of(reference_normal(key, n, mode)));
    EXPECT_EQ(bits_of(truncated_normal(key, -2.0f, 2.0f, n, mode)),
              bits_of(reference_truncated_normal(key, -2.0f, 2.0f, n, mode)));
  });
}

TEST(ParallelDraw, SamplersGiveTheScalarBitsAtEverySize) {
  // Blocks are 4096 elements: none, one partial, one whole, whole plus a tail, an odd number of blocks.
  for (uint64_t n : {0ull, 1ull, 2ull, 7ull, 4095ull, 4096ull, 4097ull, 3ull * 4096 + 5, 100003ull})
    for (PrngMode mode : {PrngMode::kPartitionable, PrngMode::kLegacy})
      for (int threads : {1, 2}) expect_scalar_bits(prng_key(n + 11), n, mode, threads);
}

// draw() takes the AVX2 path on a CPU that has it; the baseline path must give the same bits, on
// every kind of element and a tail, in both layouts.
TEST(ParallelDraw, TheBaselinePathGivesTheBitsOfThisCpusPath) {
  const uint64_t n = 3 * 4096 + 17;
  const std::vector<ElementTransform> transforms{
      {ElementTransform::Kind::kUniform, -1.0f, 2.0f},
      {ElementTransform::Kind::kNormal, std::nextafter(-1.0f, 0.0f), 1.0f - std::nextafter(-1.0f, 0.0f)},
      {ElementTransform::Kind::kTruncatedNormal, -0.9f, 1.8f, -2.0f, 2.0f}};
  for (PrngMode mode : {PrngMode::kPartitionable, PrngMode::kLegacy})
    for (const ElementTransform& t : transforms)
      EXPECT_EQ(bits_of(draw(prng_key(5), n, mode, t)), bits_of(draw_on_baseline(prng_key(5), n, mode, t)))
          << "kind " << static_cast<int>(t.kind);
}

TEST(ParallelDraw, SamplersGiveTheScalarBitsOnManyDraws) {
  // Two million draws reach erf_inv's tail branch (|u| > 0.9966) about seven thousand times.
  const uint64_t n = uint64_t{1} << 21;
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      EXPECT_EQ(bits_of(normal(prng_key(5), n, PrngMode::kPartitionable)),
                bits_of(reference_normal(prng_key(5), n, PrngMode::kPartitionable)));
    });
  }
  // Bounds whose erf saturates to -1: the uniform's lowest value is -1, where erf_inv is -inf, clamped.
  EXPECT_EQ(bits_of(truncated_normal(prng_key(6), -10.0f, 0.5f, n, PrngMode::kPartitionable)),
            bits_of(reference_truncated_normal(prng_key(6), -10.0f, 0.5f, n, PrngMode::kPartitionable)));
}

TEST(ParallelDraw, BranchFreeMathIsXlaMathOnEveryUniformValue) {
  // Every value uniform can give normal's and the initializers' truncated_normal's ranges (its
  // 2^23 mantissas), through the branch-free lanes and through xla_math.cpp, split over threads.
  const float normal_low = std::nextafter(-1.0f, 0.0f);
  const float truncated_low = xla_erf(-2.0f / kSqrt2), truncated_high = xla_erf(2.0f / kSqrt2);
  const int64_t mismatches = tbb::parallel_reduce(
      tbb::blocked_range<uint32_t>(0, 1u << 23), int64_t{0},
      [&](const tbb::blocked_range<uint32_t>& r, int64_t found) {
        for (uint32_t m = r.begin(); m < r.end(); ++m) {
          for (const auto& [low, high] : {std::pair{normal_low, 1.0f}, std::pair{truncated_low, truncated_high}}) {
            const float u = scalar_uniform(m << 9, low, high);
            found += lanes::uniform(m << 9, low, high - low) != u;
            found += std::bit_cast<uint32_t>(lanes::erf_inv(u)) != std::bit_cast<uint32_t>(xla_erf_inv(u));
          }
        }
        return found;
      },
      std::plus<>());
  EXPECT_EQ(mismatches, 0);
}

TEST(ParallelDraw, BranchFreeMathKeepsTheSpecialValues) {
  const float inf = INFINITY;
  for (float x : {-1.0f, 1.0f, 0.0f, -0.0f, 0.4142f, -0.4143f, 0.99999994f, -0.99999994f})
    EXPECT_EQ(std::bit_cast<uint32_t>(lanes::erf_inv(x)), std::bit_cast<uint32_t>(xla_erf_inv(x))) << x;
  for (float x : {0.0f, -0.0f, 1e-40f, 1.17549435e-38f, 0.5f, 0.70710677f, 1.0f, 3.0e38f, inf})
    EXPECT_EQ(std::bit_cast<uint32_t>(lanes::log(x)), std::bit_cast<uint32_t>(xla_log(x))) << x;
  for (float x : {-1.0f, -0.5f, -0.41421357f, -0.4142135f, 0.0f, 0.4142135f, 0.41421357f, 2.0f, inf})
    EXPECT_EQ(std::bit_cast<uint32_t>(lanes::log1p(x)), std::bit_cast<uint32_t>(xla_log1p(x))) << x;
  EXPECT_TRUE(std::isnan(lanes::log(-1.0f)) && std::isnan(lanes::log(-inf)) && std::isnan(lanes::log(NAN)));
  EXPECT_TRUE(std::isnan(lanes::erf_inv(NAN)) && std::isnan(lanes::log1p(-2.0f)));
}

}  // namespace
}  // namespace rematkit::random
