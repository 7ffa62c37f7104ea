// The loops the reference kernels share: elementwise maps with lax's broadcasting, and index
// arithmetic over row-major shapes. Internal to the reference math.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "rematkit/reference_math/reference_kernels.hpp"

namespace rematkit::reference {

using Dims = std::vector<int64_t>;

inline int64_t count(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline Dims strides_of(std::span<const int64_t> shape) {
  Dims s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// The coordinates of flat index `i` in `shape`.
inline void coords_of(int64_t i, std::span<const int64_t> shape, Dims& coord) {
  coord.resize(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    coord[d] = i % shape[d];
    i /= shape[d];
  }
}

// The flat index into an operand (rank 0, or the output's rank with size-1 dims) read for output
// position `i`.
inline int64_t broadcast_index(std::span<const int64_t> shape, const Dims& strides, std::span<const int64_t> out,
                               int64_t i) {
  if (shape.empty()) return 0;
  int64_t idx = 0;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) idx += (i % out[d]) * strides[d];
    i /= out[d];
  }
  return idx;
}

template <typename Fn>
void map_unary(const Input& x, const Output& out, Fn fn) {
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = fn(x.data[i]);
}

template <typename Fn>
void map_binary(const Input& a, const Input& b, const Output& out, Fn fn) {
  const bool same = count(a.shape) == static_cast<int64_t>(out.data.size()) &&
                    count(b.shape) == static_cast<int64_t>(out.data.size());
  const Dims sa = strides_of(a.shape), sb = strides_of(b.shape);
  for (int64_t i = 0; i < static_cast<int64_t>(out.data.size()); ++i) {
    const int64_t ia = same ? i : broadcast_index(a.shape, sa, out.shape, i);
    const int64_t ib = same ? i : broadcast_index(b.shape, sb, out.shape, i);
    out.data[i] = fn(a.data[ia], b.data[ib]);
  }
}

// clamp's three operands: the bounds are rank 0 or the operand's shape.
template <typename Fn>
void map_ternary(const Input& a, const Input& b, const Input& c, const Output& out, Fn fn) {
  auto at = [&](const Input& x, size_t i) { return x.data[x.shape.empty() ? 0 : i]; };
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = fn(at(a, i), at(b, i), at(c, i));
}

// Every primitive with a complex operand or result (complex_kernels.cpp).
void compute_complex(Prim prim, const KernelParams& params, std::span<const Input> in, const Output& out);

// Kernels with more than an elementwise formula (structural.cpp, dot_general.cpp, indexing.cpp).
void select_n(std::span<const Input> in, const Output& out);
void dot_general(const DotDims& dims, const Input& lhs, const Input& rhs, const Output& out);
enum class Reduction { kSum, kProd, kMax, kMin };
void reduce(Reduction kind, const std::vector<int64_t>& axes, const Input& x, const Output& out);
void arg_extreme(bool is_max, int64_t axis, const Input& x, const Output& out);
enum class Cumulative { kSum, kProd, kMax, kMin, kLogSumExp };
void cumulative(Cumulative kind, int64_t axis, bool reverse, const Input& x, const Output& out);
void broadcast_in_dim(const std::vector<int64_t>& dims, const Input& x, const Output& out);
void transpose(const std::vector<int64_t>& permutation, const Input& x, const Output& out);
void softmax(int64_t axis, const Input& x, const Output& out);
void sort(int64_t dimension, int64_t num_keys, int64_t output, std::span<const Input> in, const Output& out);
// Indexing and layout (indexing.cpp).
void iota(int64_t dimension, const Output& out);
void concatenate(int64_t dimension, std::span<const Input> in, const Output& out);
void slice(const Dims& starts, const Dims& strides, const Input& x, const Output& out);
void dynamic_slice(std::span<const Input> in, const Output& out);
void dynamic_update_slice(std::span<const Input> in, const Output& out);
void pad(const std::vector<PaddingDim>& config, const Input& x, const Input& value, const Output& out);
void rev(const Dims& dimensions, const Input& x, const Output& out);
void gather(const KernelParams& p, const Input& operand, const Input& indices, const Output& out);
void scatter_add(const KernelParams& p, const Input& operand, const Input& indices, const Input& updates,
                 const Output& out);
// Convolutions and windows (convolution.cpp, windowed_reductions.cpp).
void conv_general_dilated(const ConvParams& p, const Input& lhs, const Input& rhs, const Output& out);
enum class WindowReduction { kSum, kMax, kMin };
void reduce_window(WindowReduction kind, const WindowParams& w, const Input& x, const Output& out);
void select_and_gather_add(bool selects_max, const WindowParams& w, const Input& tangents, const Input& operand,
                           const Output& out);
void select_and_scatter_add(bool selects_max, const WindowParams& w, const Input& source, const Input& operand,
                            const Output& out);
// jax.random's threefry primitives (random.cpp), counters laid out as jax_threefry_partitionable.
void random_seed(const Input& seed, const Output& out);
void random_wrap(const Input& words, const Output& out);
void random_unwrap(const Input& keys, const Output& out);
void random_split(const Dims& shape, const Input& keys, const Output& out);
void random_fold_in(const Input& keys, const Input& data, const Output& out);
void random_bits(int64_t bit_width, const Dims& shape, const Input& keys, const Output& out);
void threefry2x32(int64_t output, std::span<const Input> in, const Output& out);

}  // namespace rematkit::reference
