// The product kind: dot_general of f32 with any dimension numbers, as a batch of row-major GEMMs
// (kernels.hpp's gemm). Operands are permuted into the GEMM's layout in the kernel's workspace when
// they are not in it already, and B's panels are packed there too. SIMD-free.
#pragma once
#include <cstddef>
#include <optional>

#include "highway/equation.hpp"
#include "highway/kernels.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

// [batch, m, depth] x [batch, depth, cols], and where its scratch lies in a workspace.
struct Product {
  size_t batch = 1, m = 0, cols = 0, depth = 0;
  Permutation lhs, rhs;  // into those layouts; copied into the workspace unless identity
  // The floats each product of the batch gets for B's packed panels, and where they start in the
  // workspace: after the permuted operands, each starting on a cache line (the products of a batch
  // run in parallel).
  size_t packing = 0, packing_at = 0;

  // nullopt unless `eq` is a dot_general of f32.
  static std::optional<Product> of(const Equation& eq);
  // The floats of workspace it uses: the permuted operands, then the packing buffers.
  size_t workspace_floats() const { return packing_at + batch * packing; }
  // The product into c, its operands permuted into the workspace first where they must be;
  // `epilogue`, when given, runs on each block of c as soon as it is done (rows count through the batch).
  void run(const float* a, const float* b, float* c, float* workspace, const Epilogue* epilogue) const;
};

// `floats` rounded up to a 64-byte cache line.
constexpr size_t cache_lines(size_t floats) { return (floats + 15) / 16 * 16; }

struct GemmKernel {
  Product product;
  static std::optional<GemmKernel> prepare(const Equation& eq);
  size_t workspace() const { return sizeof(float) * product.workspace_floats(); }
  void run(const rk_tensor_view* in, const rk_tensor_view* out, void* workspace) const;
};

}  // namespace rematkit::hwy_backend
