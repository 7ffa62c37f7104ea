// Kernel kinds of two operands over the output's shape: f32 arithmetic (add, sub, mul, div, max,
// min), f32 comparisons, and bitwise ops on 32-bit integers. An operand is the output's shape, a
// rank-0 scalar, or of the output's rank with size-1 dims: read row by row where those dims leave
// whole rows, or else expanded into the workspace first. SIMD-free: they call kernels.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "highway/equation.hpp"
#include "highway/kernels.hpp"

namespace rematkit::hwy_backend {

// The two operands of a binary kind and how it reads them.
struct BinaryOperands {
  size_t n = 0;  // elements of the output
  Dims out_shape;
  bool a_scalar = false, b_scalar = false;
  Dims a_shape, b_shape;  // operands with size-1 dims to expand (empty: read as they are)
  // Over `rows` rows of `inner` elements (rows 0: not by rows), each operand read as it is, as one
  // value per row, or as one row for all.
  enum class Spread : uint8_t { kFull, kScalar, kPerRow, kEachRow };
  size_t rows = 0, inner = 0;
  // Short rows grouped: each row of `inner` is `group` of the operands' rows, and an each-row
  // operand is read from its row repeated `group` times in the workspace (a bias's [1, 1, 1, C]
  // beside NHWC: one call per 1024 elements, not per C).
  size_t group = 1;
  Spread a_spread = Spread::kFull, b_spread = Spread::kFull;

  // nullopt when an operand is none of those shapes.
  static std::optional<BinaryOperands> of(const Dims& a, const Dims& b, const Dims& out);
  // Those of a single equation's two inputs.
  static std::optional<BinaryOperands> of(const Equation& eq);
  // Row by row: each-row operands repeated over a group; otherwise the expanded operands.
  size_t workspace() const;
  // An estimate where one was measured (elementwise_costs.hpp), else -1.
  double expected_ns() const;

};

// y = a op b on f32.
struct BinaryKernel {
  Binary op;
  BinaryOperands operands;
  static std::optional<BinaryKernel> prepare(const Equation& eq);
  size_t workspace() const { return operands.workspace(); }
  double expected_ns() const { return operands.expected_ns(); }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// y = a op b on f32, as 0 / 1 bytes.
struct CompareKernel {
  Compare op;
  BinaryOperands operands;
  static std::optional<CompareKernel> prepare(const Equation& eq);
  size_t workspace() const { return operands.workspace(); }
  double expected_ns() const { return operands.expected_ns(); }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// y = a op b on 32-bit integers of one dtype (the arithmetic shift on i32 alone).
struct BitwiseKernel {
  Bitwise op;
  BinaryOperands operands;
  static std::optional<BitwiseKernel> prepare(const Equation& eq);
  size_t workspace() const { return operands.workspace(); }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
