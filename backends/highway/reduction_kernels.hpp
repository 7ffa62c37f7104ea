// Kernel kinds that reduce rows: reduce_sum and reduce_max of f32 over any axes, and reduce_sum,
// reduce_max and reduce_min of bf16 and f16 (in double, rounded once, with the reference backend's
// bits: in order, or long rows in SIMD where the order cannot show, half_row_reductions.hpp);
// softmax of f32 along the last axis. SIMD-free: they call kernels.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

#include "highway/equation.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

enum class Reduce : uint8_t { kSum, kMax, kMin };  // kMin of bf16 and f16 alone

// Which reduction and of what: f32 sum and max run kernels.hpp's loops, a half dtype the
// double accumulators of reduction_kernels.cpp.
struct Reduction {
  Reduce op;
  int32_t dtype;  // RK_DTYPE_F32, BF16 or F16
  size_t element_bytes() const { return dtype == RK_DTYPE_F32 ? 4 : 2; }
};

// Adjacent axes reduced with kept axes after them (a bias's gradient sums over the batch, a global
// average pool over H and W of NHWC): rows added to rows within each block of the axes before
// them, no copy. `len` rows of `n / outer` elements in each of `outer` blocks.
struct ReduceLeadingKernel {
  Reduction reduction;
  size_t n, len, outer;
  static std::optional<ReduceLeadingKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for f32
  size_t workspace() const;  // a half dtype's accumulators: a double per output of a block
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// Any axes: kept axes first, reduced axes last (a copy in the workspace unless already so), so each
// of the `n` output elements reduces one contiguous row of `len`.
struct ReduceKernel {
  Reduction reduction;
  size_t n, len;
  Permutation rows;  // the operand into that layout
  static std::optional<ReduceKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for f32
  size_t workspace() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// jax.nn.softmax along the last axis (attention's); other axes go to the next backend.
struct SoftmaxKernel {
  size_t n, len;
  static std::optional<SoftmaxKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
