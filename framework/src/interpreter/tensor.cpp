#include "rematkit/interpreter/tensor.hpp"

#include <algorithm>
#include <cmath>

#include "rematkit/reference_math/element_values.hpp"

namespace rematkit {

Tensor leading_row(const Tensor& stacked, int64_t i) {
  Tensor t;
  t.type = stacked.type;
  t.type.shape.erase(t.type.shape.begin());
  const int64_t n = t.type.num_elements();
  t.data.assign(stacked.data.begin() + i * n, stacked.data.begin() + (i + 1) * n);
  if (!stacked.imag.empty()) t.imag.assign(stacked.imag.begin() + i * n, stacked.imag.begin() + (i + 1) * n);
  return t;
}

void set_leading_row(Tensor& stacked, int64_t i, const Tensor& row) {
  std::copy(row.data.begin(), row.data.end(), stacked.data.begin() + i * row.size());
  if (!row.imag.empty()) std::copy(row.imag.begin(), row.imag.end(), stacked.imag.begin() + i * row.size());
}

Tensor Tensor::filled(const Type& type, double value, double imag) {
  const size_t n = static_cast<size_t>(type.num_elements());
  return Tensor{type, std::vector<double>(n, value), is_complex(type.dtype) ? std::vector<double>(n, imag) : std::vector<double>{}};
}

Tensor Tensor::scalar(double value, DType dtype) { return filled(Type{dtype, {}, MemorySpace::kDevice}, value); }

Tensor read_buffer(const Type& type, const void* data) {
  Tensor t = Tensor::filled(type, 0.0);
  const int32_t code = dtype_code(type.dtype);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = reference::load_element(data, code, i);
  for (size_t i = 0; i < t.imag.size(); ++i) t.imag[i] = reference::load_complex_part(data, code, i, 1);
  return t;
}

void write_buffer(const Tensor& t, void* data) {
  const int32_t code = dtype_code(t.type.dtype);
  for (size_t i = 0; i < t.data.size(); ++i) reference::store_element(data, code, i, t.data[i]);
  for (size_t i = 0; i < t.imag.size(); ++i) reference::store_complex_part(data, code, i, 1, t.imag[i]);
}

void fill_buffer(const Type& type, double value, double imag, void* data) {
  const int32_t code = dtype_code(type.dtype);
  const bool complex = is_complex(type.dtype);
  for (size_t i = 0; i < static_cast<size_t>(type.num_elements()); ++i) {
    reference::store_element(data, code, i, value);
    if (complex) reference::store_complex_part(data, code, i, 1, imag);
  }
}

double key_element(uint32_t word0, uint32_t word1) { return reference::key_element(word0, word1); }

uint32_t key_word(double key, int word) { return reference::key_word(key, word); }

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

}  // namespace rematkit
