// Kernel kinds that move elements as they are: broadcast_in_dim, transpose, rev, slice,
// concatenate, split, pad, and iota. Plain copies of bits (layout.hpp), so bf16 and f16 elements
// move as f32 ones do, with the reference backend's bits.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "highway/equation.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

// broadcast_in_dim of f32, i32, u32, bool, bf16 or f16.
struct BroadcastKernel {
  size_t element_bytes;  // 4, 2 for bf16 and f16, 1 for bool
  Dims in_shape, dims, out_shape;  // dims: broadcast_dimensions
  static std::optional<BroadcastKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// The kinds below move f32, bf16 or f16 elements (4 or 2 bytes), every operand of the result's dtype.

// transpose.
struct PermuteKernel {
  size_t element_bytes;
  Permutation permutation;
  static std::optional<PermuteKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// rev.
struct ReverseKernel {
  size_t element_bytes;
  Dims shape, dims;
  static std::optional<ReverseKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// reshape and squeeze of bf16 and f16: the bits copied (f32's are UnaryKernel's copies).
struct ReshapeKernel {
  size_t bytes;
  static std::optional<ReshapeKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// lax.slice, with strides.
struct SliceKernel {
  size_t element_bytes;
  Slice slice;
  static std::optional<SliceKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// Runs of elements: `outer` runs of `in_run` elements in the operand and `out_run` in the output, the
// operand's run at element `at` of the output's (pad) or the output's at `at` of the operand's (split).
struct Runs {
  size_t outer, in_run, out_run, at;
};

// concatenate along `dimension`: each operand's run in turn, `outer` times.
struct ConcatenateKernel {
  size_t element_bytes, outer, out_run;
  std::vector<size_t> in_runs;  // per operand
  static std::optional<ConcatenateKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// split's output `output`, of the pieces along `axis`: a slab of each run.
struct SplitKernel {
  size_t element_bytes;
  Runs runs;
  static std::optional<SplitKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// pad: runs with edges along one axis when it pads one axis by zero or more without interior
// padding (split's transpose), otherwise the general Padding.
struct PadKernel {
  size_t element_bytes;
  std::optional<Runs> runs;
  Padding padding;
  static std::optional<PadKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// iota of i32, f32, bf16 or f16: `n` elements, each step of `dimension` spanning `run_length`
// elements, `size` steps.
struct IotaKernel {
  int32_t dtype;
  size_t n, run_length, size;
  static std::optional<IotaKernel> prepare(const Equation& eq);
  double expected_ns() const;  // bf16 and f16 (half_costs.hpp); -1, none, for the others
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
