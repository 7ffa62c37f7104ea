// Lanes of a bf16 or f16 elementwise op recomputed by the reference math (half_precision.hpp says
// which): the primitive's own case of rematkit/reference_math (compute.cpp, in double) and its
// store (element_values.hpp), the code the reference backend runs, so those lanes have its bits.
// SIMD-free.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "highway/half_precision.hpp"
#include "rematkit/plugin/primitive_table.hpp"

namespace rematkit::hwy_backend {

struct ReferenceLanes {
  Prim prim = Prim::kAdd;
  int64_t integer = 0;  // integer_pow's y
  std::array<int32_t, 3> operand_dtypes{};
  size_t num_operands = 0;
  int32_t dtype = 0;  // the result's: f32, bf16 or f16

  // y[i] for each i in lanes[0 .. count): the reference's result from the operands at i (at 0 where
  // scalar), rounded to `dtype` and held as f32; and its bf16 or f16 bits to bits[i] unless bits is
  // null.
  void recompute(const LaneOperand* operands, const uint32_t* lanes, size_t count, float* y, uint16_t* bits) const;
};

}  // namespace rematkit::hwy_backend
