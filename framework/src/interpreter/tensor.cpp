#include "rematkit/tensor.hpp"

#include <cmath>

namespace rematkit {

Tensor Tensor::filled(const Type& type, double value) {
  return Tensor{type, std::vector<double>(static_cast<size_t>(type.num_elements()), value)};
}

Tensor Tensor::scalar(double value, DType dtype) { return filled(Type{dtype, {}, MemorySpace::kDevice}, value); }

double round_to_dtype(double value, DType dtype, Arithmetic arithmetic) {
  switch (dtype) {
    case DType::kF32:
      return arithmetic == Arithmetic::kFloat32 ? static_cast<double>(static_cast<float>(value)) : value;
    case DType::kI32: {
      if (std::isnan(value)) return 0;
      double t = std::trunc(value);
      // Saturate rather than overflow (casting an out-of-range double is undefined behaviour).
      if (t > 2147483647.0) return 2147483647.0;
      if (t < -2147483648.0) return -2147483648.0;
      return t;
    }
    case DType::kBool: return value != 0 ? 1.0 : 0.0;
  }
  return value;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

}  // namespace rematkit
