#include "loops.hpp"

namespace rematkit::reference {

// Output = batch dims, lhs free dims, rhs free dims; every output element sums its contraction in
// double, in row-major order of the contracting dims, so results do not depend on blocking.
void dot_general(const DotDims& dims, const Input& lhs, const Input& rhs, const Output& out) {
  const Dims lstr = strides_of(lhs.shape), rstr = strides_of(rhs.shape);
  const Dims lfree = dot_free_dims(static_cast<int64_t>(lhs.shape.size()), dims.lhs_contract, dims.lhs_batch);
  const Dims rfree = dot_free_dims(static_cast<int64_t>(rhs.shape.size()), dims.rhs_contract, dims.rhs_batch);
  Dims contract_shape;
  for (int64_t d : dims.lhs_contract) contract_shape.push_back(lhs.shape[d]);
  const int64_t contract_size = count(contract_shape);
  Dims coord, ccoord;
  for (int64_t o = 0; o < static_cast<int64_t>(out.data.size()); ++o) {
    coords_of(o, out.shape, coord);
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
      coords_of(c, contract_shape, ccoord);
      int64_t loff = lbase, roff = rbase;
      for (size_t j = 0; j < ccoord.size(); ++j) {
        loff += ccoord[j] * lstr[dims.lhs_contract[j]];
        roff += ccoord[j] * rstr[dims.rhs_contract[j]];
      }
      acc += lhs.data[loff] * rhs.data[roff];
    }
    out.data[o] = acc;
  }
}

}  // namespace rematkit::reference
