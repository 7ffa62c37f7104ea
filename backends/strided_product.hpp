// A dot_general read as strided matrices, for the backends that hand products to a GEMM library
// (blas, xsmm; onednn's sgemm): each operand's batch, free and contracted dims must each read as
// one strided dim, or the library cannot run the product without a copy. On the plugin SDK alone.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace rematkit::backends {

using Dims = std::vector<int64_t>;

// A group of an operand's dims read as one dim: its size and the floats between its elements.
struct Dim {
  int64_t size = 1, stride = 1;
};

// The group's dims as one, when in the group's order they lie in memory as one dim does (size-1
// dims fit anywhere); nullopt otherwise.
inline std::optional<Dim> as_one_dim(const Dims& shape, const Dims& group) {
  Dims strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  Dim out;
  bool first = true;
  for (auto d = group.rbegin(); d != group.rend(); ++d) {  // innermost first
    const auto at = static_cast<size_t>(*d);
    if (shape[at] == 1) continue;
    if (first) out.stride = strides[at];
    else if (strides[at] != out.stride * out.size) return std::nullopt;
    first = false;
    out.size *= shape[at];
  }
  return out;
}

// The dims of an operand of rank `rank` in neither list, in order: its free dims.
inline Dims free_dims(size_t rank, const Dims& contract, const Dims& batch) {
  Dims out;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() && std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

// A (rows, cols) operand as a row-major BLAS gemm reads it: as it lies when a row's elements are
// adjacent, transposed when a column's are; nullopt when neither steps by one.
struct BlasMatrix {
  bool transposed = false;
  int64_t leading = 1;  // lda or ldb: floats between rows (between columns when transposed)
};
inline std::optional<BlasMatrix> blas_matrix(Dim rows, Dim cols) {
  if (cols.size == 1 || cols.stride == 1) {
    const int64_t leading = rows.size == 1 ? cols.size : rows.stride;
    if (leading >= cols.size) return BlasMatrix{false, leading};
  }
  if (rows.size == 1 || rows.stride == 1) {
    const int64_t leading = cols.size == 1 ? rows.size : cols.stride;
    if (leading >= rows.size) return BlasMatrix{true, leading};
  }
  return std::nullopt;
}

// An f32 dot_general with no empty operand: lhs (batch, m, k), rhs (batch, k, n), each group one
// strided dim; its output (batch, m, n) is dot_general's (batch, lhs free, rhs free).
struct StridedProduct {
  Dim batch_l, batch_r, m, n, k_l, k_r;
};

inline std::optional<StridedProduct> strided_f32_product(const rk_equation_view* e) {
  if (plugin::primitive_of(e) != Prim::kDotGeneral || e->num_inputs != 2 || e->num_outputs != 1) return std::nullopt;
  if (e->inputs[0].dtype != RK_DTYPE_F32 || e->inputs[1].dtype != RK_DTYPE_F32 || e->outputs[0].dtype != RK_DTYPE_F32)
    return std::nullopt;
  const Dims ls(e->inputs[0].shape, e->inputs[0].shape + e->inputs[0].rank);
  const Dims rs(e->inputs[1].shape, e->inputs[1].shape + e->inputs[1].rank);
  for (const Dims* shape : {&ls, &rs})
    if (std::find(shape->begin(), shape->end(), 0) != shape->end()) return std::nullopt;
  const DotDims dims = plugin::dot_dims(e);
  const Dims &lc = dims.lhs_contract, &rc = dims.rhs_contract, &lb = dims.lhs_batch, &rb = dims.rhs_batch;
  const auto batch_l = as_one_dim(ls, lb), batch_r = as_one_dim(rs, rb);
  const auto m = as_one_dim(ls, free_dims(ls.size(), lc, lb)), n = as_one_dim(rs, free_dims(rs.size(), rc, rb));
  const auto k_l = as_one_dim(ls, lc), k_r = as_one_dim(rs, rc);
  if (!batch_l || !batch_r || !m || !n || !k_l || !k_r || batch_l->size != batch_r->size || k_l->size != k_r->size)
    return std::nullopt;
  return StridedProduct{*batch_l, *batch_r, *m, *n, *k_l, *k_r};
}

}  // namespace rematkit::backends
