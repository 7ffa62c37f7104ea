#include "highway/row_kernels.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

std::optional<TableRows> TableRows::of(const Equation& eq, bool scatter) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(scatter ? Prim::kScatterAdd : Prim::kGather)) return std::nullopt;
  const rk_type& table = e->inputs[0];
  const rk_type& indices = e->inputs[1];
  if (table.dtype != RK_DTYPE_F32 || table.rank != 2 || table.shape[0] < 1 || table.shape[1] < 1) return std::nullopt;
  if ((indices.dtype != RK_DTYPE_I32 && indices.dtype != RK_DTYPE_U32) || indices.rank < 1 ||
      indices.shape[indices.rank - 1] != 1)
    return std::nullopt;
  const bool wraps = plugin::find_param(e, "wrap_negative_indices") && plugin::bool_param(e, "wrap_negative_indices");
  if (e->outputs[0].dtype != RK_DTYPE_F32 || wraps) return std::nullopt;
  const IndexingDims d = plugin::indexing_dims(e);
  const int64_t window = indices.rank - 1;  // the row's dim in the output (the updates)
  if (d.window_dims != std::vector<int64_t>{window} || d.collapsed_dims != std::vector<int64_t>{0} ||
      d.index_map != std::vector<int64_t>{0} || !d.operand_batching_dims.empty())
    return std::nullopt;
  if (!scatter && plugin::ints_param(e, "slice_sizes") != std::vector<int64_t>{1, table.shape[1]}) return std::nullopt;
  if (scatter && (e->inputs[2].dtype != RK_DTYPE_F32 || e->inputs[2].rank != indices.rank ||
                  e->inputs[2].shape[window] != table.shape[1]))
    return std::nullopt;
  return TableRows{static_cast<size_t>(table.shape[0]), static_cast<size_t>(table.shape[1]), count(indices),
                   indices.dtype == RK_DTYPE_U32, plugin::index_mode(e) == IndexMode::kFillOrDrop};
}

int64_t TableRows::row_of(const void* indices, size_t r) const {
  const int64_t i = unsigned_indices ? static_cast<int64_t>(static_cast<const uint32_t*>(indices)[r])
                                     : static_cast<int64_t>(static_cast<const int32_t*>(indices)[r]);
  const int64_t last = static_cast<int64_t>(rows) - 1;
  if (i >= 0 && i <= last) return i;
  return drop_out_of_bounds ? -1 : std::clamp<int64_t>(i, 0, last);
}

std::optional<GatherRowsKernel> GatherRowsKernel::prepare(const Equation& eq) {
  const std::optional<TableRows> table = TableRows::of(eq, false);
  if (!table) return std::nullopt;
  const std::optional<double> fill = plugin::fill_value(eq.view);
  return GatherRowsKernel{*table, fill ? static_cast<float>(*fill) : std::numeric_limits<float>::quiet_NaN()};
}
void GatherRowsKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  const size_t k = table.width;
  for (size_t r = 0; r < table.n; ++r) {
    const int64_t row = table.row_of(in[1].data, r);
    float* to = f32(out[0]) + r * k;
    if (row < 0) std::fill(to, to + k, fill);
    else std::copy(f32(in[0]) + static_cast<size_t>(row) * k, f32(in[0]) + (static_cast<size_t>(row) + 1) * k, to);
  }
}

std::optional<ScatterAddRowsKernel> ScatterAddRowsKernel::prepare(const Equation& eq) {
  const std::optional<TableRows> table = TableRows::of(eq, true);
  if (!table) return std::nullopt;
  return ScatterAddRowsKernel{*table};
}
// The table, then each update row added into its row, in order.
void ScatterAddRowsKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  const size_t k = table.width;
  std::copy(f32(in[0]), f32(in[0]) + table.rows * k, f32(out[0]));
  for (size_t r = 0; r < table.n; ++r)
    if (const int64_t row = table.row_of(in[1].data, r); row >= 0)
      binary(Binary::kAdd, f32(out[0]) + static_cast<size_t>(row) * k, false, f32(in[2]) + r * k, false,
             f32(out[0]) + static_cast<size_t>(row) * k, k);
}

}  // namespace rematkit::hwy_backend
