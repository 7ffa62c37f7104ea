// Kernel kinds that move elements as they are: broadcast_in_dim, transpose, rev, split, pad along
// one axis, and iota. Plain copies (layout.hpp).
#pragma once
#include <cstddef>
#include <optional>

#include "highway/equation.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

// broadcast_in_dim of any 4-byte dtype or bool.
struct BroadcastKernel {
  size_t element_bytes;  // 4, or 1 for bool
  Dims in_shape, dims, out_shape;  // dims: broadcast_dimensions
  static std::optional<BroadcastKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// transpose of f32.
struct PermuteKernel {
  Permutation permutation;
  static std::optional<PermuteKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// rev of f32.
struct ReverseKernel {
  Dims shape, dims;
  static std::optional<ReverseKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// Runs of floats: `outer` runs of `in_run` floats in the operand and `out_run` in the output, the
// operand's run at float `at` of the output's (pad) or the output's at `at` of the operand's (split).
struct Runs {
  size_t outer, in_run, out_run, at;
};

// split's output `output`, of the pieces along `axis`: a slab of each run.
struct SplitKernel {
  Runs runs;
  static std::optional<SplitKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// pad with edges of zero or more along one axis and no interior padding (split's transpose).
struct PadKernel {
  Runs runs;
  static std::optional<PadKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// iota of i32: `n` elements, each step of `dimension` spanning `run_length` elements, `size` steps.
struct IotaKernel {
  size_t n, run_length, size;
  static std::optional<IotaKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
