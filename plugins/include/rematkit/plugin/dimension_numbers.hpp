// The structured params of primitives (dot_general's and gather's dimension numbers, pad's padding
// config), as one
// typed value for everyone who reads or writes them:
// the core's params, autodiff, Flax, the sweep's models and plugins (through plugin.hpp's
// dot_dims()). C++17, no dependencies.
#pragma once
#include <algorithm>
#include <cstdint>
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
