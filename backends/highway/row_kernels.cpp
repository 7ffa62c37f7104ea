#include "highway/row_kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "highway/half_costs.hpp"
#include "highway/half_values.hpp"
#include "highway/kernels.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

std::optional<TableRows> TableRows::of(const Equation& eq, bool scatter) {
  const rk_equation_view* e = eq.view;
  if (!eq.is(scatter ? Prim::kScatterAdd : Prim::kGather)) return std::nullopt;
  const rk_type& table = e->inputs[0];
  const rk_type& indices = e->inputs[1];
  const int32_t t = table.dtype;
  if ((t != RK_DTYPE_F32 && !is_half(t)) || table.rank != 2 || table.shape[0] < 1 || table.shape[1] < 1) return std::nullopt;
  if ((indices.dtype != RK_DTYPE_I32 && indices.dtype != RK_DTYPE_U32) || indices.rank < 1 ||
      indices.shape[indices.rank - 1] != 1)
    return std::nullopt;
  const bool wraps = plugin::find_param(e, "wrap_negative_indices") && plugin::bool_param(e, "wrap_negative_indices");
  if (e->outputs[0].dtype != t || wraps) return std::nullopt;
  const IndexingDims d = plugin::indexing_dims(e);
  const int64_t window = indices.rank - 1;  // the row's dim in the output (the updates)
  if (d.window_dims != std::vector<int64_t>{window} || d.collapsed_dims != std::vector<int64_t>{0} ||
      d.index_map != std::vector<int64_t>{0} || !d.operand_batching_dims.empty())
    return std::nullopt;
  if (!scatter && plugin::ints_param(e, "slice_sizes") != std::vector<int64_t>{1, table.shape[1]}) return std::nullopt;
  if (scatter && (e->inputs[2].dtype != t || e->inputs[2].rank != indices.rank ||
                  e->inputs[2].shape[window] != table.shape[1]))
    return std::nullopt;
  // XLA clamps a gather's windows unless FILL_OR_DROP, and drops a scatter's unless CLIP (the
  // reference's indexing.cpp).
  const IndexMode mode = plugin::index_mode(e);
  return TableRows{static_cast<size_t>(table.shape[0]), static_cast<size_t>(table.shape[1]), count(indices), t,
                   indices.dtype == RK_DTYPE_U32, scatter ? mode != IndexMode::kClip : mode == IndexMode::kFillOrDrop};
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
  const double value = fill ? *fill : std::numeric_limits<double>::quiet_NaN();  // slicing._gather_fill
  const uint32_t bits = table->dtype == RK_DTYPE_F32 ? std::bit_cast<uint32_t>(static_cast<float>(value))
                                                     : Half::of(table->dtype).bits(value);
  return GatherRowsKernel{*table, bits};
}
double GatherRowsKernel::expected_ns() const {
  return table.dtype == RK_DTYPE_F32 ? -1 : half_copy_ns(static_cast<double>(table.n * table.width));
}
void GatherRowsKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void*) const {
  with_float_element_type(table.dtype == RK_DTYPE_F32 ? 4 : 2, [&]<typename T>(T) {
    const size_t k = table.width;
    const T* from = static_cast<const T*>(in[0].data);
    for (size_t r = 0; r < table.n; ++r) {
      const int64_t row = table.row_of(in[1].data, r);
      T* to = static_cast<T*>(out[0].data) + r * k;
      if (row < 0) std::fill(to, to + k, static_cast<T>(fill));
      else std::copy(from + static_cast<size_t>(row) * k, from + (static_cast<size_t>(row) + 1) * k, to);
    }
  });
}

namespace {

constexpr size_t kNone = std::numeric_limits<size_t>::max();

// Each row's updates chained in their order: first[row], then next[update] (kNone ends a chain).
void chain_updates(const TableRows& t, const void* indices, size_t* first, size_t* next) {
  std::fill(first, first + t.rows, kNone);
  for (size_t r = t.n; r-- > 0;)
    if (const int64_t row = t.row_of(indices, r); row >= 0) {
      next[r] = first[row];
      first[row] = r;
    }
}

// A half table's scatter-add: each row's updates chained, then each row with any summed in double
// from its old value, the updates in order, and rounded once.
void scatter_add_half_rows(const TableRows& t, const uint16_t* table, const void* indices, const uint16_t* updates,
                           uint16_t* out, void* workspace) {
  const size_t k = t.width;
  const Half half = Half::of(t.dtype);
  size_t* first = static_cast<size_t*>(workspace);
  size_t* next = first + t.rows;
  double* acc = reinterpret_cast<double*>(next + t.n);
  chain_updates(t, indices, first, next);
  std::copy(table, table + t.rows * k, out);
  for (size_t row = 0; row < t.rows; ++row) {
    if (first[row] == kNone) continue;
    for (size_t j = 0; j < k; ++j) acc[j] = half.value(table[row * k + j]);
    for (size_t r = first[row]; r != kNone; r = next[r])
      for (size_t j = 0; j < k; ++j)  // of two NaNs the sum's own, as the reference's addsd keeps it
        acc[j] = std::isnan(acc[j]) ? acc[j] : acc[j] + half.value(updates[r * k + j]);
    for (size_t j = 0; j < k; ++j) out[row * k + j] = half.bits(acc[j]);
  }
}

}  // namespace

std::optional<ScatterAddRowsKernel> ScatterAddRowsKernel::prepare(const Equation& eq) {
  const std::optional<TableRows> table = TableRows::of(eq, true);
  if (!table) return std::nullopt;
  return ScatterAddRowsKernel{*table};
}
double ScatterAddRowsKernel::expected_ns() const {  // the table copied, the updates summed
  if (table.dtype == RK_DTYPE_F32) return -1;
  return half_copy_ns(static_cast<double>(table.rows * table.width)) + half_reduce_ns(static_cast<double>(table.n * table.width));
}
size_t ScatterAddRowsKernel::workspace() const {
  if (table.dtype == RK_DTYPE_F32) return 0;
  return sizeof(size_t) * (table.rows + table.n) + sizeof(double) * table.width;
}
// f32: the table, then each update row added into its row, in order.
void ScatterAddRowsKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  if (table.dtype != RK_DTYPE_F32)
    return scatter_add_half_rows(table, static_cast<const uint16_t*>(in[0].data), in[1].data,
                                 static_cast<const uint16_t*>(in[2].data), static_cast<uint16_t*>(out[0].data), workspace);
  const size_t k = table.width;
  copy32(static_cast<const uint32_t*>(in[0].data), static_cast<uint32_t*>(out[0].data), table.rows * k);
  for (size_t r = 0; r < table.n; ++r)
    if (const int64_t row = table.row_of(in[1].data, r); row >= 0)
      binary(Binary::kAdd, f32(out[0]) + static_cast<size_t>(row) * k, false, f32(in[2]) + r * k, false,
             f32(out[0]) + static_cast<size_t>(row) * k, k);
}

// The fused equation's parts: [z spread over the table's shape, the scatter-add of rows into it,
// that added to `a` (either side)], the sum its only result.
std::optional<ScatterSumRowsKernel> ScatterSumRowsKernel::prepare(const Equation& eq) {
  if (!eq.fusion) return std::nullopt;
  const plugin::Fusion& f = *eq.fusion;
  const auto& parts = f.parts();
  const int64_t inputs = static_cast<int64_t>(f.num_inputs());
  if (parts.size() != 3 || parts[0].prim != Prim::kBroadcastInDim || parts[1].prim != Prim::kScatterAdd ||
      (parts[2].prim != Prim::kAdd && parts[2].prim != Prim::kAddAny) || f.results() != std::vector<int64_t>{inputs + 2})
    return std::nullopt;
  const std::optional<TableRows> table = TableRows::of(Equation::of(f.part_equation(1).get()), true);
  if (!table || table->dtype != RK_DTYPE_F32) return std::nullopt;
  const int64_t z = parts[0].operands.at(0);
  if (z >= inputs || f.dtype(z) != RK_DTYPE_F32 || count(f.shape(z)) != 1 || parts[1].operands.size() != 3 ||
      parts[1].operands[0] != inputs || parts[1].operands[1] >= inputs || parts[1].operands[2] >= inputs)
    return std::nullopt;
  const std::vector<int64_t>& summed = parts[2].operands;
  if (summed.size() != 2 || (summed[0] == inputs + 1) == (summed[1] == inputs + 1)) return std::nullopt;
  const int64_t a = summed[0] == inputs + 1 ? summed[1] : summed[0];
  if (a >= inputs || f.dtype(a) != RK_DTYPE_F32 || f.shape(a) != f.shape(inputs + 1)) return std::nullopt;
  return ScatterSumRowsKernel{*table, static_cast<size_t>(z), static_cast<size_t>(parts[1].operands[1]),
                              static_cast<size_t>(parts[1].operands[2]), static_cast<size_t>(a)};
}
size_t ScatterSumRowsKernel::workspace() const { return sizeof(size_t) * (table.rows + table.n) + sizeof(float) * table.width; }
// Every row a + z, as the spread z plus a; then each row an update reaches, from z and its updates
// in order, as the scatter-add sums them, added to a.
void ScatterSumRowsKernel::run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const {
  const size_t k = table.width;
  const float* z = f32(in[spread]);
  const float* a = f32(in[addend]);
  const float* rows_in = f32(in[updates]);
  float* y = f32(out[0]);
  size_t* first = static_cast<size_t*>(workspace);
  size_t* next = first + table.rows;
  float* acc = reinterpret_cast<float*>(next + table.n);
  chain_updates(table, in[indices].data, first, next);
  binary(Binary::kAdd, a, false, z, true, y, table.rows * k);
  for (size_t row = 0; row < table.rows; ++row) {
    if (first[row] == kNone) continue;
    binary(Binary::kAdd, z, true, rows_in + first[row] * k, false, acc, k);
    for (size_t r = next[first[row]]; r != kNone; r = next[r]) binary(Binary::kAdd, acc, false, rows_in + r * k, false, acc, k);
    binary(Binary::kAdd, a + row * k, false, acc, false, y + row * k, k);
  }
}

}  // namespace rematkit::hwy_backend
