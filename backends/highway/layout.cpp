#include "highway/layout.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace rematkit::hwy_backend {

template <typename T>
void Permutation::apply(const T* in, T* out) const {
  const size_t rank = shape.size();
  if (const std::optional<Matrices> m = as_matrices()) return transpose(*m, in, out);
  Index in_strides, out_shape;
  if (rank > 0) in_strides[rank - 1] = 1;
  for (int i = static_cast<int>(rank) - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * shape[i + 1];
  for (size_t i = 0; i < rank; ++i) out_shape[i] = shape[perm[i]];
  // When the innermost dim stays innermost (attention's [B, S, H, Dh] -> [B, H, S, Dh]), whole
  // rows are copied; otherwise one element at a time. Pieces of the output's rows on threads, each
  // starting from its first row's coordinates.
  const bool rows = rank > 0 && perm[rank - 1] == static_cast<int64_t>(rank - 1);
  const size_t row = rows ? static_cast<size_t>(shape[rank - 1]) : 1;
  const int last = static_cast<int>(rank) - (rows ? 2 : 1);  // the dims a row index counts
  if (count() == 0) return;
  over_items(count() / row, row * sizeof(T), [&](size_t begin, size_t end) {
    Index coord{};
    // Row `begin`'s coordinates, its last counted dim fastest.
    for (size_t i = static_cast<size_t>(last + 1), index = begin; i-- > 0; index /= static_cast<size_t>(out_shape[i]))
      coord[i] = static_cast<int64_t>(index % static_cast<size_t>(out_shape[i]));
    for (size_t o = begin * row, stop = end * row; o < stop; o += row) {
      int64_t offset = 0;
      for (size_t i = 0; i < rank; ++i) offset += coord[i] * in_strides[perm[i]];
      if (rows) std::copy(in + offset, in + offset + row, out + o);
      else out[o] = in[offset];
      for (int i = last; i >= 0 && ++coord[i] == out_shape[i]; --i) coord[i] = 0;
    }
  });
}

std::optional<Permutation::Matrices> Permutation::as_matrices() const {
  const size_t rank = perm.size();
  size_t kept = 0;
  while (kept < rank && perm[kept] == static_cast<int64_t>(kept)) ++kept;
  if (rank - kept < 2) return std::nullopt;
  // The rest is dims [split, rank) then [kept, split): a rotation.
  const size_t split = static_cast<size_t>(perm[kept]);
  for (size_t i = kept; i < rank; ++i) {
    const size_t from = i - kept < rank - split ? split + (i - kept) : kept + (i - kept) - (rank - split);
    if (perm[i] != static_cast<int64_t>(from)) return std::nullopt;
  }
  Matrices m{1, 1, 1};
  for (size_t d = 0; d < kept; ++d) m.count *= static_cast<size_t>(shape[d]);
  for (size_t d = kept; d < split; ++d) m.rows *= static_cast<size_t>(shape[d]);
  for (size_t d = split; d < rank; ++d) m.cols *= static_cast<size_t>(shape[d]);
  return m;
}

template void Permutation::apply(const float*, float*) const;
template void Permutation::apply(const uint32_t*, uint32_t*) const;
template void Permutation::apply(const uint16_t*, uint16_t*) const;

// Tile by tile, so that both the rows read and the rows written stay in cache.
template <typename T>
void Permutation::transpose(const Matrices& m, const T* in, T* out) {
  constexpr size_t kTile = 32;
  const size_t rows = m.rows, cols = m.cols, bands = (rows + kTile - 1) / kTile;
  // Bands of kTile rows of each matrix on threads.
  over_items(m.count * bands, kTile * cols * sizeof(T), [&](size_t begin, size_t end) {
    for (size_t band = begin; band < end; ++band) {
      const size_t b = band / bands, r0 = band % bands * kTile;
      const T* from = in + b * rows * cols;
      T* to = out + b * rows * cols;
      for (size_t c0 = 0; c0 < cols; c0 += kTile)
        for (size_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          for (size_t r = r0; r < std::min(rows, r0 + kTile); ++r) to[c * rows + r] = from[r * cols + c];
    }
  });
}

// Blocks are copied whole: the output's trailing dims that are the operand's trailing dims in
// order, at full size (a causal mask's [S, S] under [B, H, S, S]: one block per (b, h)); otherwise
// one element at a time.
template <typename T>
void broadcast(const Dims& in_shape, std::span<const int64_t> dims, const Dims& out_shape, const T* in, T* out) {
  const size_t n_in = count(in_shape), n_out = count(out_shape);
  if (n_in == 1) return fill(in[0], out, n_out);  // zeros, a seed of ones
  bool in_order = true;  // then equal counts mean only size-1 dims were added: the same elements
  for (size_t i = 1; i < dims.size(); ++i) in_order = in_order && dims[i] > dims[i - 1];
  if (in_order && n_in == n_out) {
    if constexpr (sizeof(T) == 4) return copy32(reinterpret_cast<const uint32_t*>(in), reinterpret_cast<uint32_t*>(out), n_out);
    else return void(std::memcpy(out, in, n_out * sizeof(T)));
  }
  // The operand's dims lead the output unchanged and new dims trail (a softmax sum spread over its
  // row): each element fills a run.
  bool leading = dims.size() < out_shape.size();
  for (size_t i = 0; i < dims.size() && leading; ++i)
    leading = dims[i] == static_cast<int64_t>(i) && in_shape[i] == out_shape[i];
  if (leading) {
    const size_t run = n_out / std::max<size_t>(n_in, 1);
    for (size_t i = 0; i < n_in; ++i) fill(in[i], out + i * run, run);
    return;
  }
  const size_t rank = out_shape.size();
  Index in_strides;
  if (!in_shape.empty()) in_strides[in_shape.size() - 1] = 1;
  for (int i = static_cast<int>(in_shape.size()) - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * in_shape[i + 1];
  // The trailing output dims copied as one block: operand dims from the last back, each mapped to
  // the output dim before the last one taken, at full size.
  size_t block_dims = 0;
  int64_t block = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != static_cast<int64_t>(rank - 1 - block_dims) || in_shape[i] != out_shape[static_cast<size_t>(dims[i])]) break;
    block *= in_shape[i];
    ++block_dims;
  }
  Index coord{};
  for (size_t o = 0; o < n_out; o += static_cast<size_t>(block)) {
    int64_t offset = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      if (in_shape[i] != 1) offset += coord[dims[i]] * in_strides[i];
    if (block > 1) std::memcpy(out + o, in + offset, static_cast<size_t>(block) * sizeof(T));
    else out[o] = in[offset];
    for (int i = static_cast<int>(rank - block_dims) - 1; i >= 0 && ++coord[i] == out_shape[i]; --i) coord[i] = 0;
  }
}
template void broadcast(const Dims&, std::span<const int64_t>, const Dims&, const uint8_t*, uint8_t*);
template void broadcast(const Dims&, std::span<const int64_t>, const Dims&, const uint16_t*, uint16_t*);
template void broadcast(const Dims&, std::span<const int64_t>, const Dims&, const uint32_t*, uint32_t*);
template void broadcast(const Dims&, std::span<const int64_t>, const Dims&, const float*, float*);

// Whole rows at a time when the last dim keeps its order (a convolution kernel reversed in space,
// [H, W, I, O]).
template <typename T>
void reverse(const Dims& shape, const Dims& dims, const T* in, T* out) {
  const size_t rank = shape.size();
  if (rank == 0) return void(out[0] = in[0]);
  std::array<bool, kMaxRank> reversed{};
  for (int64_t d : dims) reversed[static_cast<size_t>(d)] = true;
  Index strides;
  strides[rank - 1] = 1;
  for (int i = static_cast<int>(rank) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  const bool rows = !reversed[rank - 1];
  const size_t row = rows ? static_cast<size_t>(shape[rank - 1]) : 1;
  Index coord{};
  for (size_t o = 0, n = count(shape); o < n; o += row) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i) offset += (reversed[i] ? shape[i] - 1 - coord[i] : coord[i]) * strides[i];
    if (rows) std::copy(in + offset, in + offset + row, out + o);
    else out[o] = in[offset];
    for (int i = static_cast<int>(rank) - (rows ? 2 : 1); i >= 0 && ++coord[i] == shape[i]; --i) coord[i] = 0;
  }
}

template void reverse(const Dims&, const Dims&, const uint32_t*, uint32_t*);
template void reverse(const Dims&, const Dims&, const uint16_t*, uint16_t*);

template <typename T>
void Slice::apply(const T* in, T* out) const {
  const size_t rank = in_shape.size();
  if (rank == 0) return void(out[0] = in[0]);
  Index in_strides;
  in_strides[rank - 1] = 1;
  for (size_t i = rank - 1; i-- > 0;) in_strides[i] = in_strides[i + 1] * in_shape[i + 1];
  const bool rows = stride[rank - 1] == 1;
  const size_t row = rows ? static_cast<size_t>(out_shape[rank - 1]) : 1;
  Index coord{};
  for (size_t o = 0, n = count(out_shape); o < n; o += row) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i) offset += (start[i] + coord[i] * stride[i]) * in_strides[i];
    if (rows) std::copy(in + offset, in + offset + row, out + o);
    else out[o] = in[offset];
    for (int i = static_cast<int>(rank) - (rows ? 2 : 1); i >= 0 && ++coord[i] == out_shape[i]; --i) coord[i] = 0;
  }
}
template void Slice::apply(const uint32_t*, uint32_t*) const;
template void Slice::apply(const uint16_t*, uint16_t*) const;

// Operand rows (its last dim) one at a time, each element placed by the last dim's padding.
template <typename T>
void Padding::apply(const T* in, T value, T* out) const {
  fill(value, out, count(out_shape));
  const size_t rank = in_shape.size();
  if (rank == 0) return void(out[0] = in[0]);
  Index out_strides;
  out_strides[rank - 1] = 1;
  for (size_t i = rank - 1; i-- > 0;) out_strides[i] = out_strides[i + 1] * out_shape[i + 1];
  const int64_t row = in_shape[rank - 1], step = config[rank - 1].interior + 1;
  Index coord{};
  for (size_t i = 0, n = count(in_shape); i < n; i += static_cast<size_t>(row)) {
    int64_t offset = 0;
    bool inside = true;
    for (size_t d = 0; d + 1 < rank; ++d) {
      const int64_t at = config[d].low + coord[d] * (config[d].interior + 1);
      inside = inside && at >= 0 && at < out_shape[d];
      offset += at * out_strides[d];
    }
    for (int64_t k = 0, at = config[rank - 1].low; inside && k < row; ++k, at += step)
      if (at >= 0 && at < out_shape[rank - 1]) out[offset + at] = in[i + static_cast<size_t>(k)];
    for (int d = static_cast<int>(rank) - 2; d >= 0 && ++coord[d] == in_shape[d]; --d) coord[d] = 0;
  }
}
template void Padding::apply(const uint32_t*, uint32_t, uint32_t*) const;
template void Padding::apply(const uint16_t*, uint16_t, uint16_t*) const;

template <typename T>
const T* expanded(const Dims& shape, const Dims& out_shape, const T* data, T*& scratch) {
  if (shape.empty()) return data;
  Index dims;
  std::iota(dims.begin(), dims.begin() + static_cast<long>(shape.size()), 0);
  broadcast(shape, std::span<const int64_t>(dims.data(), shape.size()), out_shape, data, scratch);
  const T* result = scratch;
  scratch += count(out_shape);
  return result;
}
template const float* expanded(const Dims&, const Dims&, const float*, float*&);
template const uint16_t* expanded(const Dims&, const Dims&, const uint16_t*, uint16_t*&);

}  // namespace rematkit::hwy_backend
