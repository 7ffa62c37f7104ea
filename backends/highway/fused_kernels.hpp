// The fused kinds (rematkit/plugin/fusion_view.hpp): elementwise parts over one shape, or a product
// whose output its elementwise parts read, run as the GEMM's epilogue on each block it finishes.
// The parts run in segments (fused_elementwise.hpp). SIMD-free.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "highway/equation.hpp"
#include "highway/fused_elementwise.hpp"
#include "highway/product_kernels.hpp"

namespace rematkit::hwy_backend {

// Per value of a fused equation, the buffer that holds it: the input (i >= 0) or output (-2 - o)
// whose buffer it is, or kInside for one only the parts read.
struct FusedBuffers {
  static constexpr int kInside = -1;
  std::vector<int> buffer_of;
  static FusedBuffers of(const plugin::Fusion& fusion);
  // Each value's buffer: an input's, an output's, or null (inside the parts' segments).
  void bind(const rk_tensor_view* in, const rk_tensor_view* out, std::span<void*> values) const;
};

// Elementwise parts over their whole shape: chunks in parallel on oneTBB once there are enough. A
// single elementwise equation in bf16 or f16 runs here too, as a fusion of one part: the parts'
// code promotes, computes and rounds in segments that stay in L1.
struct FusedElementwiseKernel {
  std::shared_ptr<const FusedElementwise> parts;
  FusedBuffers buffers;
  double single_ns = -1;  // a single equation's estimate (elementwise_costs.hpp); -1 for a fusion
  static std::optional<FusedElementwiseKernel> prepare(const Equation& eq);
  size_t workspace() const { return 0; }  // the parts' segments are on the stack
  double expected_ns() const { return single_ns; }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

// A product, then elementwise parts over its output's shape on each block the GEMM finishes.
struct FusedProductKernel {
  Product product;
  std::shared_ptr<const FusedElementwise> parts;
  FusedBuffers buffers;
  size_t product_value = 0;                  // the product's result's value number
  std::array<size_t, 2> product_operands{};  // its operands' value numbers (x @ x reads one twice)
  // Where the product's result goes when only the parts read it: into the result value whose buffer
  // it is written into first, or else (-1) into the workspace at `product_at` floats.
  int product_into = -1;
  size_t product_at = 0;
  static std::optional<FusedProductKernel> prepare(const Equation& eq);
  bool product_in_workspace() const {
    return buffers.buffer_of[product_value] == FusedBuffers::kInside && product_into < 0;
  }
  size_t workspace() const;
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
