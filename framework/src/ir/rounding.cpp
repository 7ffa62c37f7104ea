#include "rematkit/ir/rounding.hpp"

#include "rematkit/reference_math/element_values.hpp"

namespace rematkit {

double round_to_dtype(double value, DType dtype, Arithmetic arithmetic) {
  return reference::round_to_code(value, dtype_code(dtype), arithmetic == Arithmetic::kFloat64);
}

}  // namespace rematkit
