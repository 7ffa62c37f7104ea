// The product kind: dot_general of f32 with any dimension numbers, as a batch of GEMMs (kernels.hpp's
// gemm). An operand is read in place by strides where the dims of its rows and of its columns each
// merge into one (a transposed weight, attention's heads in [B, S, H, Dh]), and otherwise permuted
// into the GEMM's layout in the kernel's workspace; B's panels are packed there too. SIMD-free.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "highway/equation.hpp"
#include "highway/kernels.hpp"
#include "highway/layout.hpp"

namespace rematkit::hwy_backend {

// How a product reads an operand: as a batch of matrices in place, or from a copy permuted into
// [batch, rows, cols] where its rows' or columns' dims do not merge into one stride.
struct OperandView {
  Permutation permutation;  // into [batch, rows, cols]; used where `in_place` is false
  bool in_place = false;
  size_t row_stride = 0, col_stride = 0;  // in place: of the matrices; copied: cols and 1
  Dims batch_sizes;                       // the batch dims, outermost first
  std::vector<size_t> batch_strides;      // in place: theirs; copied: rows x cols for all as one
  // Where batch item i's matrix starts.
  size_t offset(size_t i) const;
};

// [batch, m, depth] x [batch, depth, cols], and where its scratch lies in a workspace.
struct Product {
  size_t batch = 1, m = 0, cols = 0, depth = 0;
  OperandView lhs, rhs;
  // The floats each product of the batch gets for B's packed panels, and where they start in the
  // workspace: after the permuted copies, each starting on a cache line (the products of a batch
  // run in parallel).
  size_t packing = 0, packing_at = 0;

  // nullopt unless `eq` is a dot_general of f32.
  static std::optional<Product> of(const Equation& eq);
  // The floats of workspace it uses: the permuted copies, then the packing buffers.
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
