// Kernel kinds that reduce f32 rows: reduce_sum and reduce_max over any axes, and softmax along the
// last axis. SIMD-free: they call kernels.hpp.
#pragma once
#include <cstddef>
#include <optional>

#include "highway/equation.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

// Adjacent axes reduced with kept axes after them (a bias's gradient sums over the batch, a global
// average pool over H and W of NHWC): rows added to rows within each block of the axes before
// them, no copy. `len` rows of `n / outer` elements in each of `outer` blocks.
struct ReduceLeadingKernel {
  bool is_max;
  size_t n, len, outer;
  static std::optional<ReduceLeadingKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// Any axes: kept axes first, reduced axes last (a copy in the workspace unless already so), so each
// of the `n` output elements reduces one contiguous row of `len`.
struct ReduceKernel {
  bool is_max;
  size_t n, len;
  Permutation rows;  // the operand into that layout
  static std::optional<ReduceKernel> prepare(const Equation& eq);
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
