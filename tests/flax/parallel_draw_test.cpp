// The samplers drawn in blocks over threads and vectorized (framework/src/random/parallel_draw.cpp)
// give the bits of the straightforward scalar code: random_bits, then xla_math.cpp's functions one
// element at a time, as samplers.cpp wrote them before. For every size (ragged blocks, blocks that
// split unevenly over threads), both counter layouts, one thread and two. The initializers scale
// inside the draw and hand their blocks straight to a model's params: the same bits as scaling the
// whole array after it and rounding it to the param dtype.
#include <gtest/gtest.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../../framework/src/random/parallel_draw.hpp"  // draw_on_baseline
#include "../../framework/src/random/sampler_lanes.hpp"  // header-only; checked against xla_math.cpp below
#include "rematkit/flax/gpt.hpp"
#include "rematkit/flax/initializers.hpp"
#include "rematkit/ir/rounding.hpp"
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
      {ElementTransform::Kind::kTruncatedNormal, -0.9f, 1.8f, -2.0f, 2.0f},
      {ElementTransform::Kind::kTruncatedNormal, -0.9f, 1.8f, -2.0f, 2.0f, 0.0227f}};  // an initializer's scale
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

// The scalar initializers: the sampler's array, then `values * factor` in f32 (jax.nn.initializers).
std::vector<float> times(std::vector<float> values, float factor) {
  for (float& v : values) v = v * factor;
  return values;
}

// An initializer's values as the blocks it hands over, each put in place.
std::vector<float> through_blocks(const flax::Initializer& init, const Key& key, const Shape& shape) {
  std::vector<float> values(static_cast<size_t>(num_elements(shape)), NAN);
  init(key, shape, PrngMode::kPartitionable, [&](uint64_t first, const float* block, size_t count) {
    std::copy(block, block + count, values.begin() + static_cast<std::ptrdiff_t>(first));
  });
  return values;
}

TEST(ParallelDraw, InitializersGiveTheScalarCodesBitsWholeAndInBlocks) {
  // 10,500 elements (two whole blocks and a tail); fan_in 5 * 3, fan_out 700 * 3.
  const Shape shape{3, 5, 700};
  const uint64_t n = 3 * 5 * 700;
  const Key key = prng_key(9);
  const PrngMode mode = PrngMode::kPartitionable;
  const float fan_in_variance = static_cast<float>(1.0 / 15), fan_avg_variance = static_cast<float>(1.0 / 1057.5);
  const std::vector<std::pair<flax::Initializer, std::vector<float>>> cases{
      {flax::normal(0.02f), times(reference_normal(key, n, mode), 0.02f)},
      {flax::uniform(0.5f), times(reference_uniform(key, n, 0.0f, 1.0f, mode), 0.5f)},
      {flax::lecun_normal(),
       times(reference_truncated_normal(key, -2.0f, 2.0f, n, mode), std::sqrt(fan_in_variance) / 0.87962566103423978f)},
      {flax::variance_scaling(2.0, flax::FanMode::kFanOut, flax::Distribution::kNormal),
       times(reference_normal(key, n, mode), std::sqrt(static_cast<float>(2.0 / 2100)))},
      {flax::glorot_uniform(), times(reference_uniform(key, n, -1.0f, 1.0f, mode), std::sqrt(3.0f * fan_avg_variance))},
      {flax::normal(1.0f), reference_normal(key, n, mode)},  // a factor of 1: the multiply is skipped
      {flax::constant(0.25f), std::vector<float>(n, 0.25f)},
      {[](const Key&, const Shape& s, PrngMode) { return std::vector<float>(static_cast<size_t>(num_elements(s)), 3.5f); },
       std::vector<float>(n, 3.5f)}};
  for (int threads : {1, 2}) {
    tbb::task_arena arena(threads);
    arena.execute([&] {
      for (size_t i = 0; i < cases.size(); ++i) {
        const auto& [init, expected] = cases[i];
        EXPECT_EQ(bits_of(init(key, shape, mode)), bits_of(expected)) << "case " << i << ", threads " << threads;
        EXPECT_EQ(bits_of(through_blocks(init, key, shape)), bits_of(expected)) << "case " << i << ", threads " << threads;
      }
    });
  }
}

std::vector<uint64_t> bits_of(const std::vector<double>& v) {
  std::vector<uint64_t> bits;
  for (double d : v) bits.push_back(std::bit_cast<uint64_t>(d));
  return bits;
}

// gpt.cpp's params in order, each the scalar code's draw from split(PRNGKey(seed), count) rounded to
// the dtype: wte, wpe, then per block ln_1 (ones, zeros), c_attn, c_proj, ln_2, c_fc, mlp's c_proj
// (each a normal(0.02) kernel and a zeros bias), then ln_f.
std::vector<std::vector<double>> scalar_gpt_params(const GptConfig& c, uint64_t seed) {
  enum class Init { kNormal, kOnes, kZeros };
  const int64_t D = c.model, M = c.mlp;
  std::vector<std::pair<Shape, Init>> specs{{{c.vocab, D}, Init::kNormal}, {{c.sequence, D}, Init::kNormal}};
  for (int64_t l = 0; l < c.layers; ++l)
    for (const auto& spec : std::vector<std::pair<Shape, Init>>{
             {{D}, Init::kOnes},         {{D}, Init::kZeros},     {{D, 3 * D}, Init::kNormal}, {{3 * D}, Init::kZeros},
             {{D, D}, Init::kNormal},    {{D}, Init::kZeros},     {{D}, Init::kOnes},          {{D}, Init::kZeros},
             {{D, M}, Init::kNormal},    {{M}, Init::kZeros},     {{M, D}, Init::kNormal},     {{D}, Init::kZeros}})
      specs.push_back(spec);
  specs.push_back({{D}, Init::kOnes});
  specs.push_back({{D}, Init::kZeros});
  const std::vector<Key> keys = split(prng_key(seed), specs.size(), PrngMode::kPartitionable);
  std::vector<std::vector<double>> params;
  for (size_t i = 0; i < specs.size(); ++i) {
    const uint64_t n = static_cast<uint64_t>(num_elements(specs[i].first));
    std::vector<float> values(n, specs[i].second == Init::kOnes ? 1.0f : 0.0f);
    if (specs[i].second == Init::kNormal) values = times(reference_normal(keys[i], n, PrngMode::kPartitionable), 0.02f);
    std::vector<double>& rounded = params.emplace_back();
    for (float v : values) rounded.push_back(round_to_dtype(v, c.dtype, Arithmetic::kFloat32));
  }
  return params;
}

TEST(ParallelDraw, GptParamsAreTheScalarDrawsRoundedToTheirDtype) {
  GptConfig c;
  c.vocab = 300, c.sequence = 16, c.model = 32, c.heads = 2, c.layers = 3, c.mlp = 64, c.batch = 1;  // wte: 3 blocks
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (const std::vector<int64_t>& lengths : {std::vector<int64_t>{}, std::vector<int64_t>{3}}) {
      SCOPED_TRACE(std::string(dtype == DType::kF32 ? "f32" : "bf16") + (lengths.empty() ? ", unrolled" : ", scanned"));
      c.dtype = dtype, c.scan_lengths = lengths;
      const std::vector<std::vector<double>> expected = scalar_gpt_params(c, 7);
      const Model m = build_gpt(c, "nothing_saveable", 7);
      // Scanned: the leading two, each block param stacked over the blocks, then ln_f's two.
      std::vector<std::vector<double>> want;
      const size_t per_block = 12, layers = 3;
      for (size_t i = 0; i < expected.size(); ++i) {
        const bool block_param = i >= 2 && i < 2 + per_block * layers;
        if (lengths.empty() || !block_param) want.push_back(expected[i]);
        if (lengths.empty() || i != 2) continue;
        for (size_t k = 0; k < per_block; ++k) {
          std::vector<double>& stacked = want.emplace_back();
          for (size_t l = 0; l < layers; ++l)
            stacked.insert(stacked.end(), expected[2 + l * per_block + k].begin(), expected[2 + l * per_block + k].end());
        }
      }
      ASSERT_EQ(m.params.size(), want.size());
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_EQ(bits_of(m.arguments[m.params[k]].data), bits_of(want[k])) << "param " << k;
    }
  }
}

}  // namespace
}  // namespace rematkit::random
