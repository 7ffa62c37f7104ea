#include <algorithm>

#include "kernels.hpp"

namespace rematkit::kernels {

// Output = batch dims, lhs free dims, rhs free dims; every output element sums its contraction in
// double, in row-major order of the contracting dims, so results do not depend on blocking.
Tensor dot_general(const DotDims& dims, const Tensor& lhs, const Tensor& rhs, const Type& out, Arithmetic arithmetic) {
  const Shape& ls = lhs.type.shape;
  const Shape& rs = rhs.type.shape;
  const auto lstr = row_major_strides(ls), rstr = row_major_strides(rs);
  const auto lfree = dot_free_dims(lhs.type.rank(), dims.lhs_contract, dims.lhs_batch);
  const auto rfree = dot_free_dims(rhs.type.rank(), dims.rhs_contract, dims.rhs_batch);

  Shape contract_shape;
  for (int64_t d : dims.lhs_contract) contract_shape.push_back(ls[d]);
  const int64_t contract_size = num_elements(contract_shape);

  Tensor r{out, std::vector<double>(static_cast<size_t>(out.num_elements()))};
  std::vector<int64_t> coord(out.shape.size());
  for (int64_t o = 0; o < r.size(); ++o) {
    int64_t rem = o;
    for (int d = static_cast<int>(out.shape.size()) - 1; d >= 0; --d) {
      coord[d] = rem % out.shape[d];
      rem /= out.shape[d];
    }
    int64_t lbase = 0, rbase = 0;
    size_t k = 0;
    for (size_t b = 0; b < dims.lhs_batch.size(); ++b, ++k) {
      lbase += coord[k] * lstr[dims.lhs_batch[b]];
      rbase += coord[k] * rstr[dims.rhs_batch[b]];
    }
    for (int64_t d : lfree) lbase += coord[k++] * lstr[d];
    for (int64_t d : rfree) rbase += coord[k++] * rstr[d];
    double acc = 0.0;
    for (int64_t c = 0; c < contract_size; ++c) {
      int64_t crem = c, loff = lbase, roff = rbase;
      for (int j = static_cast<int>(contract_shape.size()) - 1; j >= 0; --j) {
        int64_t cj = crem % contract_shape[j];
        crem /= contract_shape[j];
        loff += cj * lstr[dims.lhs_contract[j]];
        roff += cj * rstr[dims.rhs_contract[j]];
      }
      acc += lhs.data[loff] * rhs.data[roff];
    }
    r.data[o] = round_to_dtype(acc, out.dtype, arithmetic);
  }
  return r;
}

}  // namespace rematkit::kernels
