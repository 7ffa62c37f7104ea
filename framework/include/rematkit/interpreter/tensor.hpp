// Tensor: a host array of the reference interpreter. Elements are held as doubles whose values
// are exactly representable in the tensor's dtype (f32 values are rounded to float).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/rounding.hpp"  // Arithmetic, round_to_dtype
#include "rematkit/ir/types.hpp"

namespace rematkit {

// A value held by the host: its type and its elements as doubles (f32 values are exact in a
// double; i32 and bool as whole numbers).
struct REMATKIT_CORE_EXPORT Tensor {
  Type type;
  std::vector<double> data;  // row-major, type.num_elements() entries; a complex tensor's real parts
  std::vector<double> imag;  // a complex tensor's imaginary parts, as `data`; empty for other dtypes

  Tensor() = default;
  Tensor(Type type, std::vector<double> data, std::vector<double> imag = {})
      : type(std::move(type)), data(std::move(data)), imag(std::move(imag)) {}

  // Every element `value` (+ `imag` i for a complex type) / a rank-0 tensor.
  static Tensor filled(const Type& type, double value, double imag = 0);
  static Tensor scalar(double value, DType dtype = DType::kF32);
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};


// A key<fry> element (a threefry key: jax.random.key's two u32 words, as random_unwrap gives them)
// is held in its double's 64 bits; these make one and read its words back.
REMATKIT_CORE_EXPORT double key_element(uint32_t word0, uint32_t word1);
REMATKIT_CORE_EXPORT uint32_t key_word(double key, int word);  // word 0 or 1

// A buffer of `type` (each dtype in its own size, a complex element its real then imaginary part,
// as the C ABI lays them out) read into a tensor, and a tensor written into one.
REMATKIT_CORE_EXPORT Tensor read_buffer(const Type& type, const void* data);
REMATKIT_CORE_EXPORT void write_buffer(const Tensor& t, void* data);
// Every element of a buffer of `type` set to `value` (+ `imag` i for a complex type), allocating
// nothing (a step's loads of literals and seeds).
REMATKIT_CORE_EXPORT void fill_buffer(const Type& type, double value, double imag, void* data);

// Row `i` of a tensor stacked along its leading dim (a scan's x slice, a stacked residual's row).
REMATKIT_CORE_EXPORT Tensor leading_row(const Tensor& stacked, int64_t i);
// Puts `row` at row `i` of `stacked` (a scan's ys, built row by row).
REMATKIT_CORE_EXPORT void set_leading_row(Tensor& stacked, int64_t i, const Tensor& row);

// Row-major strides of `shape` (in elements).
REMATKIT_CORE_EXPORT std::vector<int64_t> row_major_strides(const Shape& shape);

}  // namespace rematkit
