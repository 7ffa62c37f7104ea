#include "rematkit/flax/initializers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "../random/parallel_draw.hpp"
#include "../random/present_pages.hpp"
#include "rematkit/ir/error.hpp"

namespace rematkit::flax {

using random::ElementTransform;

Initializer Initializer::in_blocks(Blocks blocks) {
  Initializer init;
  init.blocks_ = std::move(blocks);
  return init;
}

std::vector<float> Initializer::operator()(const random::Key& key, const Shape& shape, random::PrngMode mode) const {
  if (values_) return values_(key, shape, mode);
  std::vector<float> values = random::with_present_pages<float>(static_cast<size_t>(num_elements(shape)));
  blocks_(key, shape, mode, [&](uint64_t first, const float* block, size_t count) {
    std::memcpy(values.data() + first, block, count * sizeof(float));
  });
  return values;
}

void Initializer::operator()(const random::Key& key, const Shape& shape, random::PrngMode mode,
                             const BlockSink& sink) const {
  if (!values_) return blocks_(key, shape, mode, sink);
  const std::vector<float> values = values_(key, shape, mode);
  sink(0, values.data(), values.size());
}

namespace {

// An initializer drawing `transform`'s samples for the shape's elements; the transform's scale is
// jnp's `values * factor` on the drawn f32 array, one f32 multiply per element.
Initializer drawn(std::function<ElementTransform(const Shape&)> transform_for) {
  return Initializer::in_blocks([transform_for = std::move(transform_for)](const random::Key& key, const Shape& shape,
                                                                           random::PrngMode mode,
                                                                           const Initializer::BlockSink& sink) {
    const ElementTransform transform = transform_for(shape);
    random::draw_blocks(key, static_cast<uint64_t>(num_elements(shape)), mode, transform, sink);
  });
}

ElementTransform times(ElementTransform t, float factor) {
  t.scale = factor;
  return t;
}

}  // namespace

Initializer constant(float value) {
  return [value](const random::Key&, const Shape& shape, random::PrngMode) {
    return std::vector<float>(static_cast<size_t>(num_elements(shape)), value);
  };
}
Initializer zeros() { return constant(0.0f); }
Initializer ones() { return constant(1.0f); }

Initializer normal(float stddev) {
  return drawn([stddev](const Shape&) { return times(random::normal_transform(), stddev); });
}

Initializer uniform(float scale) {
  return drawn([scale](const Shape&) { return times(random::uniform_transform(0.0f, 1.0f), scale); });
}

Initializer variance_scaling(double scale, FanMode fan_mode, Distribution distribution, int in_axis, int out_axis) {
  return drawn([=](const Shape& shape) {
    const int rank = static_cast<int>(shape.size());
    if (rank < 2)
      fail("variance_scaling: cannot compute input and output sizes of a " + std::to_string(rank) +
           "-dimensional weights tensor; it must be at least 2-D");
    const int in = in_axis < 0 ? in_axis + rank : in_axis;
    const int out = out_axis < 0 ? out_axis + rank : out_axis;
    // _compute_fans: the receptive field is everything but the in and out axes.
    const double receptive = static_cast<double>(num_elements(shape)) / static_cast<double>(shape[in]) /
                             static_cast<double>(shape[out]);
    const double fan_in = static_cast<double>(shape[in]) * receptive;
    const double fan_out = static_cast<double>(shape[out]) * receptive;
    const double denominator = fan_mode == FanMode::kFanIn    ? fan_in
                               : fan_mode == FanMode::kFanOut ? fan_out
                                                              : (fan_in + fan_out) / 2;
    const float variance = static_cast<float>(scale / denominator);  // jnp.array(scale / denominator, f32)
    switch (distribution) {
      case Distribution::kTruncatedNormal:
        // The standard deviation of N(0, 1) truncated to (-2, 2).
        return times(random::truncated_normal_transform(-2.0f, 2.0f), std::sqrt(variance) / 0.87962566103423978f);
      case Distribution::kNormal: return times(random::normal_transform(), std::sqrt(variance));
      case Distribution::kUniform: return times(random::uniform_transform(-1.0f, 1.0f), std::sqrt(3.0f * variance));
    }
    return ElementTransform{};
  });
}

Initializer lecun_normal() { return variance_scaling(1.0, FanMode::kFanIn, Distribution::kTruncatedNormal); }
Initializer lecun_uniform() { return variance_scaling(1.0, FanMode::kFanIn, Distribution::kUniform); }
Initializer glorot_normal() { return variance_scaling(1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal); }
Initializer glorot_uniform() { return variance_scaling(1.0, FanMode::kFanAvg, Distribution::kUniform); }
Initializer he_normal() { return variance_scaling(2.0, FanMode::kFanIn, Distribution::kTruncatedNormal); }
Initializer he_uniform() { return variance_scaling(2.0, FanMode::kFanIn, Distribution::kUniform); }

}  // namespace rematkit::flax
