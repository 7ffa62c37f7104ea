// Copies that move elements between layouts, as they are: an operand permuted, broadcast or
// reversed, and a value filled. Plain loops (no SIMD but fill32's), shared by the kernel kinds.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "highway/equation.hpp"
#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

// A copy of an operand with its dims reordered: out[i...] = in[perm applied], row-major.
struct Permutation {
  Dims shape, perm;  // the operand's shape; output dim i is input dim perm[i]
  bool identity() const {
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return true;
  }
  size_t count() const {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
  }
  void apply(const float* in, float* out) const;

 private:
  // A batch of matrices to transpose: leading dims in place, then two groups of adjacent dims
  // swapped. A weight's transpose (the last two dims), and attention's heads moved past the
  // sequence ([B, H, Dh, S] to [B, S, H, Dh]: rows of H*Dh, columns of S).
  struct Matrices {
    size_t count, rows, cols;
  };
  std::optional<Matrices> as_matrices() const;
  static void transpose(const Matrices& m, const float* in, float* out);
};

// n copies of the 4-byte (or bool) value v.
template <typename T>
void fill(T v, T* out, size_t n) {
  if constexpr (sizeof(T) == 4) fill32(std::bit_cast<uint32_t>(v), reinterpret_cast<uint32_t*>(out), n);
  else std::fill(out, out + n, v);
}

// broadcast_in_dim of `in` (shape in_shape, placed at output dims `dims`) to out_shape; T is
// uint8_t, uint32_t or float.
template <typename T>
void broadcast(const Dims& in_shape, std::span<const int64_t> dims, const Dims& out_shape, const T* in, T* out);

// rev: out[i...] = in[i with each of `dims` counted from its end].
void reverse(const Dims& shape, const Dims& dims, const float* in, float* out);

// An operand with size-1 dims expanded to the output's shape in `scratch` (then advanced), or as is.
const float* expanded(const Dims& shape, const Dims& out_shape, const float* data, float*& scratch);

}  // namespace rematkit::hwy_backend
