// Known answers for each layer of the PRNG, from published sources (not from our own output):
// Random123's kat_vectors (also JAX's testThreefry2x32), JAX's random_test values for key(0), and
// reference/flax-init.md sections 1.4, 3.1 and 8.
#include <gtest/gtest.h>

#include <cmath>

#include "rematkit/flax/scope.hpp"
#include "rematkit/random/samplers.hpp"
#include "rematkit/random/xla_math.hpp"

namespace rematkit::random {
namespace {

TEST(Threefry, Random123KnownAnswers) {
  // threefry2x32_20: (key, counter) -> output.
  EXPECT_EQ(threefry2x32({0, 0}, {0, 0}), (Block{0x6b200159, 0x99ba4efe}));
  EXPECT_EQ(threefry2x32({0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}), (Block{0x1cb996fc, 0xbb002be7}));
  EXPECT_EQ(threefry2x32({0x13198a2e, 0x03707344}, {0x243f6a88, 0x85a308d3}), (Block{0xc4923a9c, 0x483df7a0}));
}

TEST(Threefry, ArrayLayoutPairsTheTwoHalves) {
  // threefry_2x32(key, [a0, a1, b0, b1]) hashes (a0, b0) and (a1, b1): check against single blocks.
  const Key key{0x13198a2e, 0x03707344};
  const std::vector<uint32_t> out = threefry_2x32(key, {1, 2, 3, 4});
  const Block first = threefry2x32(key, {1, 3}), second = threefry2x32(key, {2, 4});
  EXPECT_EQ(out, (std::vector<uint32_t>{first[0], second[0], first[1], second[1]}));
  // Odd lengths are padded with a zero counter that is dropped from the output.
  const std::vector<uint32_t> odd = threefry_2x32(key, {7, 8, 9});
  const Block p0 = threefry2x32(key, {7, 9}), p1 = threefry2x32(key, {8, 0});
  EXPECT_EQ(odd, (std::vector<uint32_t>{p0[0], p1[0], p0[1]}));
}

TEST(Keys, PrngKeyFollowsJaxWithX64Off) {
  EXPECT_EQ(prng_key(0), (Key{0, 0}));
  EXPECT_EQ(prng_key(42), (Key{0, 42}));
  EXPECT_EQ(prng_key(4294967295ull), (Key{0, 4294967295u}));
  EXPECT_EQ(prng_key((1ull << 32) + 5), (Key{0, 5}));  // narrowed to 32 bits
}

TEST(Keys, FoldInAndSplitOfKeyZero) {
  const Key k0 = prng_key(0);
  // JAX tests/random_test.py: fold_in(key(0), 4) and split(key(0), 4) (original layout).
  EXPECT_EQ(fold_in(k0, 4), (Key{2285895361u, 433833334u}));
  EXPECT_EQ(split(k0, 4, PrngMode::kLegacy),
            (std::vector<Key>{{2285895361u, 1501764800u}, {1518642379u, 4090693311u}, {433833334u, 4221794875u},
                              {839183663u, 3740430601u}}));
  // Partitionable split(key, n)[i] == fold_in(key, i); values of jax.random.split(key(0), 13)
  // under jax 0.10.2 for the first five.
  const std::vector<Key> keys = split(k0, 5, PrngMode::kPartitionable);
  const std::vector<Key> expected = {{1797259609u, 2579123966u}, {928981903u, 3453687069u},
                                     {4146024105u, 2718843009u}, {2467461003u, 3840466878u},
                                     {2285895361u, 433833334u}};
  EXPECT_EQ(keys, expected);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(keys[i], fold_in(k0, i));
}

TEST(Bits, BothLayoutsFromTheirDefinition) {
  const Key key{1, 2};
  const std::vector<uint32_t> partitionable = random_bits(key, 3, PrngMode::kPartitionable);
  for (uint32_t i = 0; i < 3; ++i) {
    const Block b = threefry2x32(key, {0, i});
    EXPECT_EQ(partitionable[i], b[0] ^ b[1]);
  }
  EXPECT_EQ(random_bits(key, 5, PrngMode::kLegacy), threefry_2x32(key, {0, 1, 2, 3, 4}));
}

TEST(XlaMath, SpecialValuesFromTheSpec) {
  // flax-init.md 2.3: erf(+-2 / sqrt(2)) in f32 is +-0.9544997215270996 for every implementation.
  const float arg = 2.0f / 1.41421356237309504880f;
  EXPECT_EQ(static_cast<double>(arg), 1.4142135381698608);
  EXPECT_EQ(static_cast<double>(xla_erf(arg)), 0.9544997215270996);
  EXPECT_EQ(static_cast<double>(xla_erf(-arg)), -0.9544997215270996);
  EXPECT_EQ(xla_erf(5.0f), 1.0f);
  EXPECT_TRUE(std::isinf(xla_erf_inv(1.0f)) && xla_erf_inv(1.0f) > 0);
  EXPECT_EQ(xla_erf_inv(0.0f), 0.0f);
}

TEST(XlaMath, AccurateAgainstTheLibm) {
  // Independent math: the XLA polynomials stay within a few ulp of the correctly rounded functions.
  for (float x = 0.001f; x < 50.0f; x *= 1.37f) EXPECT_NEAR(xla_log(x), std::log(x), 4e-7 * std::fabs(std::log(x)) + 1e-7);
  for (float x = -0.9f; x < 3.0f; x += 0.0137f) EXPECT_NEAR(xla_log1p(x), std::log1p(x), 3e-7 * std::fabs(std::log1p(x)) + 1e-8);
  // XLA's f32 rational erf is off by up to 4.0e-7 (about 7 ulp) just below its saturation at 3.83.
  for (float x = -3.5f; x < 3.5f; x += 0.01f) EXPECT_NEAR(xla_erf(x), std::erf(x), 5e-7);
  for (float y = -0.999f; y < 1.0f; y += 0.0037f) EXPECT_NEAR(std::erf(static_cast<double>(xla_erf_inv(y))), y, 1e-6);
}

TEST(Samplers, UniformAndTruncatedNormalStayInRange) {
  const Key key = prng_key(7);
  for (PrngMode mode : {PrngMode::kPartitionable, PrngMode::kLegacy}) {
    for (float u : uniform(key, 1000, -3.0f, 5.0f, mode)) {
      EXPECT_GE(u, -3.0f);
      EXPECT_LT(u, 5.0f);
    }
    for (float t : truncated_normal(key, -2.0f, 2.0f, 1000, mode)) EXPECT_LT(std::fabs(t), 2.0f);
  }
}

TEST(Samplers, UniformIsTheMantissaConstruction) {
  const Key key = prng_key(3);
  const std::vector<uint32_t> bits = random_bits(key, 4, PrngMode::kPartitionable);
  const std::vector<float> u = uniform(key, 4, 0.0f, 1.0f, PrngMode::kPartitionable);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(u[i], static_cast<float>(bits[i] >> 9) / 8388608.0f);  // exact
}

TEST(FlaxRng, PathHashesFromTheSpec) {
  // flax-init.md section 8: H('Dense_l' + counter 1), without and with the separator.
  using flax::lazy_rng_hash;
  EXPECT_EQ(lazy_rng_hash({std::string("Dense_0"), uint64_t{1}}, false), 0xb2b71315u);
  EXPECT_EQ(lazy_rng_hash({std::string("Dense_1"), uint64_t{1}}, false), 0x06a9f0dcu);
  EXPECT_EQ(lazy_rng_hash({std::string("Dense_2"), uint64_t{1}}, false), 0x519e9909u);
  EXPECT_EQ(lazy_rng_hash({std::string("Dense_0"), uint64_t{1}}, true), 0xffa3ca5fu);
  EXPECT_EQ(lazy_rng_hash({std::string("Dense_1"), uint64_t{1}}, true), 0xf7a0db5cu);
  EXPECT_EQ(lazy_rng_hash({std::string("Dense_2"), uint64_t{1}}, true), 0x5c31a5b2u);
  // seed 0 -> Dense_0's kernel key.
  flax::Scope root(prng_key(0), {});
  EXPECT_EQ(root.push_autonamed("Dense").make_rng(), (Key{3043437727u, 3662875008u}));
}

}  // namespace
}  // namespace rematkit::random
