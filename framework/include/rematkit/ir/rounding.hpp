// Rounding a value to what its dtype holds: literals as they are read, and every result of the
// interpreter. One implementation, the reference math's (which backends agree with bit for bit).
#pragma once

#include "rematkit/core_export.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

// How the interpreter rounds: kFloat32 rounds every f32 result to float, as f32 hardware does;
// kFloat64 keeps exact doubles (for finite-difference gradient checks).
enum class Arithmetic { kFloat32, kFloat64 };

// Rounds `value` to what `dtype` holds under `arithmetic`.
REMATKIT_CORE_EXPORT double round_to_dtype(double value, DType dtype, Arithmetic arithmetic);

}  // namespace rematkit
