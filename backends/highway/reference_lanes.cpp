#include "highway/reference_lanes.hpp"

#include <span>

#include "rematkit/reference_math/element_values.hpp"
#include "rematkit/reference_math/reference_kernels.hpp"

namespace rematkit::hwy_backend {

void ReferenceLanes::recompute(const LaneOperand* operands, const uint32_t* lanes, size_t count, float* y, uint16_t* bits) const {
  // Most segments flag no lane: return before the parameters' vectors are built and freed.
  if (count == 0) return;
  reference::KernelParams params;
  params.integer = integer;
  for (size_t l = 0; l < count; ++l) {
    const size_t i = lanes[l];
    std::array<double, 3> x{};
    std::array<reference::Input, 3> in{};
    for (size_t k = 0; k < num_operands; ++k) {
      x[k] = operands[k].data[operands[k].scalar ? 0 : i];
      in[k] = reference::Input{std::span<const double>(&x[k], 1), {}, operand_dtypes[k], {}};
    }
    double result = 0;
    reference::compute(prim, params, std::span<const reference::Input>(in.data(), num_operands),
                       reference::Output{std::span<double>(&result, 1), {}, dtype, {}});
    // store_element's rounding (to f32, then to bf16 or f16), whose value f32 holds exactly
    y[i] = static_cast<float>(reference::round_to_code(result, dtype, false));
    if (bits) bits[i] = dtype == RK_DTYPE_BF16 ? reference::bf16_bits(y[i]) : reference::f16_bits(y[i]);
  }
}

}  // namespace rematkit::hwy_backend
