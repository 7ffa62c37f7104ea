#include "rematkit/interpreter/tensor.hpp"

#include <cmath>

#include "rematkit/reference_math/element_values.hpp"

namespace rematkit {

Tensor leading_row(const Tensor& stacked, int64_t i) {
  Tensor t;
  t.type = stacked.type;
  t.type.shape.erase(t.type.shape.begin());
  const int64_t n = t.type.num_elements();
  t.data.assign(stacked.data.begin() + i * n, stacked.data.begin() + (i + 1) * n);
  return t;
}

Tensor Tensor::filled(const Type& type, double value) {
  return Tensor{type, std::vector<double>(static_cast<size_t>(type.num_elements()), value)};
}

Tensor Tensor::scalar(double value, DType dtype) { return filled(Type{dtype, {}, MemorySpace::kDevice}, value); }

double key_element(uint32_t word0, uint32_t word1) { return reference::key_element(word0, word1); }

uint32_t key_word(double key, int word) { return reference::key_word(key, word); }

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

}  // namespace rematkit
