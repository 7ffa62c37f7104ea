// Copies that move elements between layouts, as they are: an operand permuted, broadcast, reversed
// or sliced, and a value filled. Plain loops (no SIMD but fill32's), shared by the kernel kinds.
// They move bits, so each takes its element type: float or uint32_t for 4-byte dtypes, uint16_t for
// bf16 and f16, uint8_t for bool (element_type picks one from a size).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "highway/equation.hpp"
#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

// body(begin, end) over items [0, n) of `item_bytes` bytes each (a layout kernel's runs or rows,
// a bulk fill's floats): on oneTBB in pieces of about kMovedPerTask bytes once the whole is
// kMovedInParallel or more and the arena has a second thread, else at once. A copy runs at memory
// speed, and two cores move about twice what one does (rematkit_peak_probe's STREAM triad).
inline constexpr size_t kMovedInParallel = size_t{1} << 20, kMovedPerTask = size_t{1} << 18;
template <typename Body>
void over_items(size_t n, size_t item_bytes, Body body) {
  const size_t bytes = n * item_bytes;
  if (bytes < kMovedInParallel || n < 2 || tbb::this_task_arena::max_concurrency() < 2) return body(size_t{0}, n);
  const size_t grain = std::max<size_t>(1, kMovedPerTask / std::max<size_t>(1, item_bytes));
  tbb::parallel_for(tbb::blocked_range<size_t>(0, n, grain),
                    [&](const tbb::blocked_range<size_t>& r) { body(r.begin(), r.end()); });
}

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
  template <typename T>
  void apply(const T* in, T* out) const;

 private:
  // A batch of matrices to transpose: leading dims in place, then two groups of adjacent dims
  // swapped. A weight's transpose (the last two dims), and attention's heads moved past the
  // sequence ([B, H, Dh, S] to [B, S, H, Dh]: rows of H*Dh, columns of S).
  struct Matrices {
    size_t count, rows, cols;
  };
  std::optional<Matrices> as_matrices() const;
  template <typename T>
  static void transpose(const Matrices& m, const T* in, T* out);
};

// Calls f(T{}) with T the unsigned type of `bytes` bytes (1, 2, or 4 for any other size): a kernel
// that moves bits picks its element type so from its dtype's size.
template <typename F>
decltype(auto) with_element_type(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    default: return f(uint32_t{});
  }
}
// The same for kinds of f32, bf16 and f16 elements alone: 2 bytes or 4.
template <typename F>
decltype(auto) with_float_element_type(size_t bytes, F&& f) {
  if (bytes == 2) return f(uint16_t{});
  return f(uint32_t{});
}

// n copies of the 4-byte (or bool) value v.
template <typename T>
void fill(T v, T* out, size_t n) {
  if constexpr (sizeof(T) == 4) fill32(std::bit_cast<uint32_t>(v), reinterpret_cast<uint32_t*>(out), n);
  else std::fill(out, out + n, v);
}

// broadcast_in_dim of `in` (shape in_shape, placed at output dims `dims`) to out_shape; T is
// uint8_t, uint16_t, uint32_t or float.
template <typename T>
void broadcast(const Dims& in_shape, std::span<const int64_t> dims, const Dims& out_shape, const T* in, T* out);

// rev: out[i...] = in[i with each of `dims` counted from its end].
template <typename T>
void reverse(const Dims& shape, const Dims& dims, const T* in, T* out);

// lax.slice: out[i...] = in[start + i * stride...] (whole rows when the last stride is 1).
struct Slice {
  Dims in_shape, start, stride, out_shape;
  template <typename T>
  void apply(const T* in, T* out) const;
};

// lax.pad: `value` everywhere but where an operand element lands, at low + k * (interior + 1)
// along each dim (a negative low or high crops).
struct Padding {
  Dims in_shape, out_shape;
  std::vector<PaddingDim> config;
  template <typename T>
  void apply(const T* in, T value, T* out) const;
};

// An operand with size-1 dims expanded to the output's shape in `scratch` (then advanced), or as is.
template <typename T>
const T* expanded(const Dims& shape, const Dims& out_shape, const T* data, T*& scratch);

}  // namespace rematkit::hwy_backend
