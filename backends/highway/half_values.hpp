// bf16 and f16 elements as the layout, indexing and reduction kinds read and store them one at a
// time: promoted to f32 exactly, and a double stored as the reference backend stores it, by the
// reference math's own conversions (rematkit/reference_math/element_values.hpp: to f32 first, then
// to nearest even, a NaN kept quiet), so that a kind computing in double gives its bits. The
// elementwise kinds' vector loops are half_precision.hpp's.
#pragma once
#include <cstdint>

#include "rematkit/plugin/rk_plugin.h"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit::hwy_backend {

inline bool is_half(int32_t dtype) { return dtype == RK_DTYPE_BF16 || dtype == RK_DTYPE_F16; }

// One of the two half dtypes, chosen when a kernel is prepared.
struct Half {
  bool is_bf16;
  static Half of(int32_t dtype) { return Half{dtype == RK_DTYPE_BF16}; }
  float value(uint16_t bits) const { return is_bf16 ? reference::bf16_value(bits) : reference::f16_value(bits); }
  // A double as the reference's store_element rounds it: to f32, then to the half.
  uint16_t bits(double v) const {
    const float f = static_cast<float>(v);
    return is_bf16 ? reference::bf16_bits(f) : reference::f16_bits(f);
  }
};

}  // namespace rematkit::hwy_backend
