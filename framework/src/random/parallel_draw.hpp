// Drawing a sampler's n floats in blocks, split over oneTBB's threads and vectorized for the CPU it
// runs on. Threefry is counter-based, so every element's bits depend on its index alone: the floats
// are the same whatever the threads and the instruction set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/random/threefry.hpp"

namespace rematkit::random {

// What an element's 32 random bits become (samplers.hpp's definitions).
struct ElementTransform {
  enum class Kind { kUniform, kNormal, kTruncatedNormal };
  Kind kind = Kind::kUniform;
  float minval = 0.0f;  // the uniform's [minval, minval + span)
  float span = 1.0f;
  float lo = 0.0f;      // kTruncatedNormal: the clamp's bounds
  float hi = 0.0f;
  float scale = 1.0f;   // then one f32 multiply by `scale` (an initializer's), skipped at 1
};

// The samplers' transforms (samplers.cpp): uniform(minval, maxval), normal(), and
// truncated_normal(lower, upper).
ElementTransform uniform_transform(float minval, float maxval);
ElementTransform normal_transform();
ElementTransform truncated_normal_transform(float lower, float upper);

// Where drawn values go when they are not held whole: each block's floats while they are in L1,
// with the flat index of the block's first. Blocks come in any order, from several threads at once.
using BlockSink = std::function<void(uint64_t first, const float* values, size_t count)>;

// random_bits(key, n, mode) with `transform` applied to each word. (Both are exported for the tests
// alone: this header is internal.)
REMATKIT_FLAX_EXPORT std::vector<float> draw(const Key& key, uint64_t n, PrngMode mode, const ElementTransform& transform);
// The same on the baseline instruction set whatever the CPU has: what the tests set beside draw()
// on a CPU where draw() takes the AVX2 path.
REMATKIT_FLAX_EXPORT std::vector<float> draw_on_baseline(const Key& key, uint64_t n, PrngMode mode, const ElementTransform& transform);
// draw()'s floats handed to `sink` block by block (the initializers' way into a model's params).
void draw_blocks(const Key& key, uint64_t n, PrngMode mode, const ElementTransform& transform, const BlockSink& sink);

}  // namespace rematkit::random
