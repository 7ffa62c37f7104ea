// The Highway backend's kernel kinds, one struct each, and the order they are offered an equation,
// after oneDNN's src/cpu/matmul/cpu_matmul_list.cpp: the first kind whose prepare() accepts the
// equation runs it, and one that every kind declines goes to the next backend in the user's list.
// Each kind declines in its own prepare() what it does not run, says its own workspace() bytes
// (every scratch byte is in the workspace the host gives, so a run allocates nothing), and runs in
// its own run(). SIMD-free: the SIMD loops are in the files compiled per target (kernels.hpp).
#pragma once
#include <cstddef>
#include <optional>
#include <variant>

#include "highway/binary_kernels.hpp"
#include "highway/elementwise_kernels.hpp"
#include "highway/fused_kernels.hpp"
#include "highway/layout_kernels.hpp"
#include "highway/product_kernels.hpp"
#include "highway/random_kernels.hpp"
#include "highway/reduction_kernels.hpp"
#include "highway/row_kernels.hpp"

namespace rematkit::hwy_backend {

using Kernel = std::variant<FusedProductKernel, FusedElementwiseKernel, ScatterSumRowsKernel, GatherRowsKernel, ScatterAddRowsKernel,
                            CompareIntKernel, CompareKernel, SelectKernel, BitwiseKernel, BitcastKernel, BroadcastKernel,
                            IotaKernel, RandomBitsKernel, RandomFoldInKernel, ConvertToF32Kernel, ReshapeKernel, SliceKernel,
                            ConcatenateKernel, SplitKernel, PadKernel,
                            PowKernel, UnaryKernel, BinaryKernel, SoftmaxKernel, PermuteKernel, ReverseKernel,
                            ReduceLeadingKernel, ReduceKernel, GemmKernel>;

// The kernel of the first kind in the list that accepts `e`; nullopt when none does.
std::optional<Kernel> choose_kernel(const rk_equation_view* e);

}  // namespace rematkit::hwy_backend
