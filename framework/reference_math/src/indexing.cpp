// The indexing and layout kernels: iota, concatenate, the slices, pad, rev, gather and scatter-add,
// as jax/_src/lax/slicing.py and lax.py define them (gather and scatter by XLA's operation
// semantics). Each output element is read from one operand position (or is the padding or fill
// value), scatter-add aside, which adds in update order.
#include <algorithm>
#include <limits>

#include "loops.hpp"
#include "rematkit/reference_math/element_values.hpp"

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

// One window of gather or scatter-add: where it starts in the operand, clamped into it, for the
// batch position `batch` of the indices (a flat index over all their dims but the last).
struct Window {
  Dims start;
  bool in_bounds = true;
};

Window window_start(const IndexingDims& d, bool wrap_negative, const Input& indices, int64_t batch,
                    std::span<const int64_t> operand_shape, std::span<const int64_t> window) {
  const int64_t components = static_cast<int64_t>(d.index_map.size());
  Window w{Dims(operand_shape.size(), 0), true};
  for (int64_t k = 0; k < components; ++k) {
    const int64_t dim = d.index_map[k];
    const int64_t highest = operand_shape[dim] - window[dim];
    int64_t start = static_cast<int64_t>(indices.data[batch * components + k]);
    if (wrap_negative && start < 0) start += operand_shape[dim];  // numpy's x[-1]
    w.in_bounds &= start >= 0 && start <= highest;
    w.start[dim] = std::clamp<int64_t>(start, 0, highest);
  }
  return w;
}

// gather's fill value for None (slicing._gather_fill): NaN for floats, the lowest value for signed
// integers and the highest for unsigned ones, True for bools.
double default_fill(int32_t dtype) {
  if (const IntegerFormat f = integer_format(dtype); f.bits != 0)
    return f.is_signed ? integer_lowest(f) : integer_highest(f);
  if (dtype == RK_DTYPE_BOOL) return 1.0;
  return std::numeric_limits<double>::quiet_NaN();
}

// Walks every element of the output (gather) or of the updates (scatter-add): `shape` has the
// indices' batch dims with the window's dims at d.window_dims. Calls fn(flat, operand_index) with
// the operand position of the element, or -1 when its window is out of bounds and not clamped.
// `clamp`: whether an out-of-bounds window is clamped into the operand (else it is dropped);
// `wrap_negative`: whether a negative index counts from the end first (wrap_negative_indices,
// which JAX's pull request 30205 prints; a gather's transpose carries it to its scatter-add).
template <typename Fn>
void for_each_windowed(const IndexingDims& d, bool clamp, bool wrap_negative, const Input& indices,
                       std::span<const int64_t> operand_shape, std::span<const int64_t> shape, const Dims& window,
                       Fn fn) {
  const Dims operand_strides = strides_of(operand_shape);
  Dims kept;  // the operand dims a window keeps, in order
  for (int64_t i = 0; i < static_cast<int64_t>(operand_shape.size()); ++i)
    if (std::find(d.collapsed_dims.begin(), d.collapsed_dims.end(), i) == d.collapsed_dims.end()) kept.push_back(i);
  const std::span<const int64_t> batch_shape = indices.shape.subspan(0, indices.shape.size() - 1);
  const Dims batch_strides = strides_of(batch_shape);
  Dims coord;
  for (int64_t e = 0; e < count(shape); ++e) {
    coords_of(e, shape, coord);
    int64_t batch = 0;
    size_t w = 0, b = 0;
    Dims offset(operand_shape.size(), 0);
    for (size_t i = 0; i < coord.size(); ++i) {
      if (w < d.window_dims.size() && d.window_dims[w] == static_cast<int64_t>(i)) offset[kept[w++]] = coord[i];
      else batch += coord[i] * batch_strides[b++];
    }
    const Window start = window_start(d, wrap_negative, indices, batch, operand_shape, window);
    if (!start.in_bounds && !clamp) {
      fn(e, -1);
      continue;
    }
    int64_t at = 0;
    for (size_t dim = 0; dim < operand_shape.size(); ++dim) at += (start.start[dim] + offset[dim]) * operand_strides[dim];
    fn(e, at);
  }
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

// XLA clamps the windows of a PROMISE_IN_BOUNDS gather; FILL_OR_DROP fills them.
void gather(const KernelParams& p, const Input& operand, const Input& indices, const Output& out) {
  const double fill = p.fill ? *p.fill : default_fill(out.dtype);
  for_each_windowed(p.indexing, p.mode != IndexMode::kFillOrDrop, p.wrap_negative_indices, indices, operand.shape, out.shape, p.starts,
                    [&](int64_t e, int64_t at) { out.data[e] = at < 0 ? fill : operand.data[at]; });
}

// A window out of bounds is clamped under CLIP and dropped otherwise (XLA's scatter); the
// updates add in their row-major order.
void scatter_add(const KernelParams& p, const Input& operand, const Input& indices, const Input& updates,
                 const Output& out) {
  std::copy(operand.data.begin(), operand.data.end(), out.data.begin());
  Dims window(operand.shape.size(), 1);
  size_t w = 0;
  for (int64_t i = 0; i < static_cast<int64_t>(operand.shape.size()); ++i)
    if (std::find(p.indexing.collapsed_dims.begin(), p.indexing.collapsed_dims.end(), i) == p.indexing.collapsed_dims.end())
      window[i] = updates.shape[p.indexing.window_dims[w++]];
  for_each_windowed(p.indexing, p.mode == IndexMode::kClip, p.wrap_negative_indices, indices, operand.shape, updates.shape, window,
                    [&](int64_t e, int64_t at) {
                      if (at >= 0) out.data[at] += updates.data[e];
                    });
}

}  // namespace rematkit::reference
