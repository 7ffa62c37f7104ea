// The indexing and layout kernels: iota, concatenate, the slices, pad and rev, as
// jax/_src/lax/slicing.py and lax.py define them. Each output element is read from one operand
// position (or is the padding value), so these move values and round nothing.
#include <algorithm>

#include "loops.hpp"

namespace rematkit::reference {
namespace {

int64_t flat_index(const Dims& coord, const Dims& strides) {
  int64_t idx = 0;
  for (size_t d = 0; d < coord.size(); ++d) idx += coord[d] * strides[d];
  return idx;
}

// dynamic_slice's and dynamic_update_slice's start indices (operands from `first` on), each
// clamped so that a window of `window` fits in `shape` (XLA's semantics: never out of bounds).
Dims clamped_starts(std::span<const Input> in, size_t first, std::span<const int64_t> shape,
                    std::span<const int64_t> window) {
  Dims starts(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    starts[d] = std::clamp<int64_t>(static_cast<int64_t>(in[first + d].data[0]), 0, shape[d] - window[d]);
  return starts;
}

}  // namespace

void iota(int64_t dimension, const Output& out) {
  Dims coord;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, coord);
    out.data[o] = static_cast<double>(coord[dimension]);
  }
}

void concatenate(int64_t dimension, std::span<const Input> in, const Output& out) {
  const Dims out_strides = strides_of(out.shape);
  int64_t offset = 0;
  Dims coord;
  for (const Input& x : in) {
    for (int64_t i = 0; i < count(x.shape); ++i) {
      coords_of(i, x.shape, coord);
      coord[dimension] += offset;
      out.data[flat_index(coord, out_strides)] = x.data[i];
    }
    offset += x.shape[dimension];
  }
}

void slice(const Dims& starts, const Dims& strides, const Input& x, const Output& out) {
  const Dims x_strides = strides_of(x.shape);
  Dims coord;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, coord);
    for (size_t d = 0; d < coord.size(); ++d) coord[d] = starts[d] + coord[d] * strides[d];
    out.data[o] = x.data[flat_index(coord, x_strides)];
  }
}

void dynamic_slice(std::span<const Input> in, const Output& out) {
  const Input& x = in[0];
  const Dims starts = clamped_starts(in, 1, x.shape, out.shape);
  slice(starts, Dims(starts.size(), 1), x, out);
}

void dynamic_update_slice(std::span<const Input> in, const Output& out) {
  const Input& x = in[0];
  const Input& update = in[1];
  std::copy(x.data.begin(), x.data.end(), out.data.begin());
  const Dims starts = clamped_starts(in, 2, x.shape, update.shape);
  const Dims out_strides = strides_of(out.shape);
  Dims coord;
  for (int64_t i = 0; i < count(update.shape); ++i) {
    coords_of(i, update.shape, coord);
    for (size_t d = 0; d < coord.size(); ++d) coord[d] += starts[d];
    out.data[flat_index(coord, out_strides)] = update.data[i];
  }
}

// Every output position is the padding value unless it lands on an operand element: at
// low + k * (interior + 1) along each dim (a negative low or high crops).
void pad(const std::vector<PaddingDim>& config, const Input& x, const Input& value, const Output& out) {
  std::fill(out.data.begin(), out.data.end(), value.data[0]);
  const Dims out_strides = strides_of(out.shape);
  Dims coord;
  for (int64_t i = 0; i < count(x.shape); ++i) {
    coords_of(i, x.shape, coord);
    bool inside = true;
    for (size_t d = 0; d < coord.size(); ++d) {
      coord[d] = config[d].low + coord[d] * (config[d].interior + 1);
      inside &= coord[d] >= 0 && coord[d] < out.shape[d];
    }
    if (inside) out.data[flat_index(coord, out_strides)] = x.data[i];
  }
}

void rev(const Dims& dimensions, const Input& x, const Output& out) {
  const Dims x_strides = strides_of(x.shape);
  Dims coord;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, coord);
    for (int64_t d : dimensions) coord[d] = out.shape[d] - 1 - coord[d];
    out.data[o] = x.data[flat_index(coord, x_strides)];
  }
}

}  // namespace rematkit::reference
