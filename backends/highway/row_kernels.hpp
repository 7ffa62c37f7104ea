// Kernel kinds of an embedding's rows (x[ids], jnp.take, nn.Embed) and their transpose, the
// scatter-add of rows: a gather or scatter_add whose table is [rows, width] of f32, bf16 or f16, its
// indices [..., 1] of i32 or u32, its windows one whole row; and that scatter-add fused with the
// spread zeros it adds into and the sum that reads it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "highway/equation.hpp"

namespace rematkit::hwy_backend {

// `n` indices into a table of `rows` rows of `width` elements.
struct TableRows {
  size_t rows, width, n;
  int32_t dtype;            // the table's, the updates' and the result's
  bool unsigned_indices;    // u32 indices, else i32
  bool drop_out_of_bounds;  // a gather's FILL_OR_DROP, a scatter's mode but CLIP; otherwise clamped (XLA)
  // nullopt when the equation is not such a gather (scatter false) or scatter_add (true).
  static std::optional<TableRows> of(const Equation& eq, bool scatter);
  // Row `r`'s index, clamped into the table, or -1 when it is out of bounds and dropped.
  int64_t row_of(const void* indices, size_t r) const;
};

struct GatherRowsKernel {
  TableRows table;
  uint32_t fill;  // the bits of the element an out-of-bounds gather gives (f32's, or a half's)
  static std::optional<GatherRowsKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for f32
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// f32 adds each update row into its row in f32. bf16 and f16 add in double as the reference backend
// does (indexing.cpp's scatter_add: the old value, then the updates in order, rounded once): the
// workspace chains the updates of each row, and holds a row of doubles.
struct ScatterAddRowsKernel {
  TableRows table;
  static std::optional<ScatterAddRowsKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for f32
  size_t workspace() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// A fused step of three parts: a scalar z spread over a table, an f32 scatter-add of rows into it
// (a gather's transpose), and that added to another value a of the table's shape (a tied
// embedding's other cotangent). It writes the sum alone, a pass over a rather than a fill, a
// scatter over the fill and an add; each element is what the three give one after another: a + z,
// or, where updates reach, a plus (z plus the updates in order).
struct ScatterSumRowsKernel {
  TableRows table;
  size_t spread, indices, updates, addend;  // the fused equation's inputs: z, the scatter's two, a
  static std::optional<ScatterSumRowsKernel> prepare(const Equation& eq);
  size_t workspace() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
