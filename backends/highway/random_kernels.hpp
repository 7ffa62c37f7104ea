// Kernel kinds of jax.random on threefry keys (random_bits.cpp): random_bits and random_fold_in.
#pragma once
#include <cstddef>
#include <optional>

#include "highway/equation.hpp"

namespace rematkit::hwy_backend {

// random_bits of bit_width 32 (u32) or 8 (u8): `per_key` words for each of `keys` keys.
struct RandomBitsKernel {
  size_t keys, per_key;
  bool low_byte;  // bit_width 8: each word's low byte
  static std::optional<RandomBitsKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// random_fold_in of u32 data (as the keys, or one word for all) into each of `n` keys.
struct RandomFoldInKernel {
  size_t n;
  bool scalar_data;
  static std::optional<RandomFoldInKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
