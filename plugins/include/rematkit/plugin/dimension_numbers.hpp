// The structured params of primitives (dot_general's, gather's and conv_general_dilated's
// dimension numbers, pad's padding config, windows), as one
// typed value for everyone who reads or writes them:
// the core's params, autodiff, Flax, the sweep's models and plugins (through plugin.hpp's
// dot_dims()). C++17, no dependencies.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace rematkit {

// dot_general's dimension_numbers=(([lhs_contract], [rhs_contract]), ([lhs_batch], [rhs_batch])).
struct DotDims {
  std::vector<int64_t> lhs_contract, rhs_contract, lhs_batch, rhs_batch;
  friend bool operator==(const DotDims& a, const DotDims& b) {
    return a.lhs_contract == b.lhs_contract && a.rhs_contract == b.rhs_contract && a.lhs_batch == b.lhs_batch &&
           a.rhs_batch == b.rhs_batch;
  }
};

// lax.fft's fft_type (jax/_src/lax/fft.py, FftType): the values JAX 0.4.35 on prints.
enum class FftKind { kFft = 0, kIfft = 1, kRfft = 2, kIrfft = 3 };

// An fft_type as printed: "FftType.IRFFT" (any qualifier before the name) or "3"; -1 for neither.
inline int fft_kind_code(std::string_view text) {
  const size_t dot = text.rfind('.');
  const std::string_view name = dot == std::string_view::npos ? text : text.substr(dot + 1);
  constexpr std::string_view kNames[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  for (int i = 0; i < 4; ++i)
    if (name == kNames[i] || (text.size() == 1 && text[0] == static_cast<char>('0' + i))) return i;
  return -1;
}

// One dim of pad's padding_config: elements added before and after (negative: removed), and between
// neighbours.
struct PaddingDim {
  int64_t low = 0, high = 0, interior = 0;
  friend bool operator==(const PaddingDim& a, const PaddingDim& b) {
    return a.low == b.low && a.high == b.high && a.interior == b.interior;
  }
};

// gather's GatherDimensionNumbers and scatter's ScatterDimensionNumbers, field for field: the
// indices' last dim holds each index vector (JAX's index_vector_dim), whose component k indexes
// operand dim index_map[k].
struct IndexingDims {
  // offset_dims / update_window_dims: where the window's dims sit in the output (the updates)
  std::vector<int64_t> window_dims;
  // collapsed_slice_dims / inserted_window_dims: operand dims whose window has size 1 and no dim
  std::vector<int64_t> collapsed_dims;
  // start_index_map / scatter_dims_to_operand_dims
  std::vector<int64_t> index_map;
  // operand_batching_dims, start_indices_batching_dims / scatter_indices_batching_dims (vmap's)
  std::vector<int64_t> operand_batching_dims, indices_batching_dims;
  friend bool operator==(const IndexingDims& a, const IndexingDims& b) {
    return a.window_dims == b.window_dims && a.collapsed_dims == b.collapsed_dims && a.index_map == b.index_map &&
           a.operand_batching_dims == b.operand_batching_dims && a.indices_batching_dims == b.indices_batching_dims;
  }
};

// conv_general_dilated's ConvDimensionNumbers(lhs_spec=(..), rhs_spec=(..), out_spec=(..)): the
// positions of lhs's (batch, feature, spatial...) dims, rhs's (out feature, in feature,
// spatial...) and the output's (batch, feature, spatial...), spatial dims in the kernel's order
// (jax/_src/lax/convolution.py: ConvDimensionNumbers).
struct ConvDims {
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  friend bool operator==(const ConvDims& a, const ConvDims& b) {
    return a.lhs_spec == b.lhs_spec && a.rhs_spec == b.rhs_spec && a.out_spec == b.out_spec;
  }
};

// One dim's padding of a convolution or a window reduction, ((low, high), ...) as JAX prints it:
// elements added before and after (negative: removed).
struct PadPair {
  int64_t low = 0, high = 0;
  friend bool operator==(const PadPair& a, const PadPair& b) { return a.low == b.low && a.high == b.high; }
};

// conv_general_dilated's params, one per spatial dim except the dimension numbers and groups.
struct ConvParams {
  std::vector<int64_t> window_strides;
  std::vector<PadPair> padding;
  std::vector<int64_t> lhs_dilation, rhs_dilation;
  ConvDims dims;
  int64_t feature_group_count = 1, batch_group_count = 1;
};

// reduce_window_sum/max/min's and select_and_gather_add's window, one entry per operand dim;
// select_and_scatter_add has no dilations (all 1 here).
struct WindowParams {
  std::vector<int64_t> window_dimensions, window_strides;
  std::vector<PadPair> padding;
  std::vector<int64_t> base_dilation, window_dilation;
};

// core.dilate_dim: `d` elements with `dilation - 1` holes between neighbours (lax._dilate_shape).
inline int64_t dilate_dim(int64_t d, int64_t dilation) { return d <= 0 ? 0 : 1 + dilation * (d - 1); }
// core.stride_dim: how many windows of size `window` fit in `d` at `stride` (0 when none does).
inline int64_t stride_dim(int64_t d, int64_t window, int64_t stride) {
  return d < window ? 0 : (d - window) / stride + 1;
}

// GatherScatterMode: what an out-of-bounds index does. CLIP and PROMISE_IN_BOUNDS gathers clamp
// the window into the operand (PROMISE_IN_BOUNDS scatters drop it, as XLA does); FILL_OR_DROP
// gathers fill the window with the fill value and scatters drop it. The values are JAX's enum's.
enum class IndexMode { kClip = 1, kFillOrDrop = 2, kPromiseInBounds = 3 };

// The dims of an operand of rank `rank` that are neither contracted nor batch, in increasing order
// (they follow the batch dims in dot_general's output, lhs's before rhs's).
inline std::vector<int64_t> dot_free_dims(int64_t rank, const std::vector<int64_t>& contract,
                                          const std::vector<int64_t>& batch) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

}  // namespace rematkit
