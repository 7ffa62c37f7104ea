// Kernel kinds of an embedding's rows (x[ids], jnp.take, nn.Embed) and their transpose, the
// scatter-add of rows: a gather or scatter_add whose table is [rows, width] of f32, its indices
// [..., 1] of i32 or u32, its windows one whole row.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "highway/equation.hpp"

namespace rematkit::hwy_backend {

// `n` indices into a table of `rows` rows of `width` floats.
struct TableRows {
  size_t rows, width, n;
  bool unsigned_indices;    // u32 indices, else i32
  bool drop_out_of_bounds;  // FILL_OR_DROP; otherwise clamped into the table (XLA)
  // nullopt when the equation is not such a gather (scatter false) or scatter_add (true).
  static std::optional<TableRows> of(const Equation& eq, bool scatter);
  // Row `r`'s index, clamped into the table, or -1 when it is out of bounds and dropped.
  int64_t row_of(const void* indices, size_t r) const;
};

struct GatherRowsKernel {
  TableRows table;
  float fill;  // the row an out-of-bounds gather gives
  static std::optional<GatherRowsKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

struct ScatterAddRowsKernel {
  TableRows table;
  static std::optional<ScatterAddRowsKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
