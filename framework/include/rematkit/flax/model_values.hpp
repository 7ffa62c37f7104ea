// Whether building a model draws its arguments' values, or gives its program alone.
#pragma once

namespace rematkit {

// kDrawn: the inputs and params as Flax's Module.init draws them. kNone: the program and which of
// its arguments are params, with no value drawn, as jax.eval_shape(model.init, ...) gives shapes
// alone. A 7B model's values are tens of gigabytes and minutes of drawing; printing its program, or
// planning and solving its step, needs none of them, only memory in proportion to the program.
enum class ModelValues { kDrawn, kNone };

}  // namespace rematkit
