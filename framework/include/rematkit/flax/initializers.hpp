// Flax's initializers (jax.nn.initializers, re-exported by flax.linen.initializers).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "rematkit/flax/export.hpp"
#include "rematkit/random/threefry.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit::flax {

// init(key, shape, mode) -> float32 values in row-major order. Any function of that form is an
// initializer; the ones below also hand their values over block by block as they are drawn, so
// that a model's params are drawn straight into their tensors, on every thread, never held whole
// as floats first.
class REMATKIT_FLAX_EXPORT Initializer {
 public:
  using Values = std::function<std::vector<float>(const random::Key&, const Shape&, random::PrngMode)>;
  // A block of the values: the flat index of its first, the values, their count. Blocks come in
  // any order, from several threads at once.
  using BlockSink = std::function<void(uint64_t first, const float* values, size_t count)>;
  using Blocks = std::function<void(const random::Key&, const Shape&, random::PrngMode, const BlockSink&)>;

  Initializer() = default;
  // From a function of init's form (implicit, as std::function was): its values as one block.
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, Initializer> && std::constructible_from<Values, F>)
  Initializer(F values) : values_(std::move(values)) {}
  // From a drawing that hands its values over in blocks covering every index once.
  static Initializer in_blocks(Blocks blocks);

  std::vector<float> operator()(const random::Key& key, const Shape& shape, random::PrngMode mode) const;
  // The same values, handed to `sink` block by block.
  void operator()(const random::Key& key, const Shape& shape, random::PrngMode mode, const BlockSink& sink) const;

 private:
  Values values_;  // one of the two
  Blocks blocks_;
};

REMATKIT_FLAX_EXPORT Initializer zeros();
REMATKIT_FLAX_EXPORT Initializer ones();
REMATKIT_FLAX_EXPORT Initializer constant(float value);
REMATKIT_FLAX_EXPORT Initializer normal(float stddev = 1e-2f);
REMATKIT_FLAX_EXPORT Initializer uniform(float scale = 1e-2f);

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution { kTruncatedNormal, kNormal, kUniform };
// variance_scaling(scale, mode, distribution, in_axis, out_axis). Shapes of rank < 2 are a
// bad-input Error when the initializer runs, as in JAX.
REMATKIT_FLAX_EXPORT Initializer variance_scaling(double scale, FanMode mode, Distribution distribution, int in_axis = -2,
                             int out_axis = -1);

REMATKIT_FLAX_EXPORT Initializer lecun_normal();
REMATKIT_FLAX_EXPORT Initializer lecun_uniform();
REMATKIT_FLAX_EXPORT Initializer glorot_normal();
REMATKIT_FLAX_EXPORT Initializer glorot_uniform();
REMATKIT_FLAX_EXPORT Initializer he_normal();
REMATKIT_FLAX_EXPORT Initializer he_uniform();
inline Initializer xavier_normal() { return glorot_normal(); }
inline Initializer xavier_uniform() { return glorot_uniform(); }
inline Initializer kaiming_normal() { return he_normal(); }
inline Initializer kaiming_uniform() { return he_uniform(); }

}  // namespace rematkit::flax
