// The structured params of primitives (dot_general's dimension numbers, pad's padding config), as one
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
