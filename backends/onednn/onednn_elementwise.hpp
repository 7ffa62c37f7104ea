// oneDNN's f32 elementwise primitives as the backend uses them, alone and in fused chains: which
// primitive runs which eltwise or binary op, row-major descriptors, and a binary's operands as
// oneDNN takes them (onednn_elementwise.cpp).
#pragma once
#include <oneapi/dnnl/dnnl.hpp>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "rematkit/plugin/plugin.hpp"

namespace rematkit_onednn {

using Dims = dnnl::memory::dims;

using Prim = rematkit::Prim;

struct EltwiseOp {
  Prim primitive;
  dnnl::algorithm algorithm;
  float alpha, beta;
};
// Not log: oneDNN 2.6's f32 eltwise_log errs by up to 6144 ulp near log(1) on this CPU (measured by
// the conformance test); it is left to the next backend listed.
inline const EltwiseOp kEltwise[] = {
    {Prim::kExp, dnnl::algorithm::eltwise_exp, 0, 0},
    {Prim::kTanh, dnnl::algorithm::eltwise_tanh, 0, 0},     {Prim::kLogistic, dnnl::algorithm::eltwise_logistic, 0, 0},
    {Prim::kSqrt, dnnl::algorithm::eltwise_sqrt, 0, 0},     {Prim::kSquare, dnnl::algorithm::eltwise_square, 0, 0},
    {Prim::kRelu, dnnl::algorithm::eltwise_relu, 0, 0},     {Prim::kNeg, dnnl::algorithm::eltwise_linear, -1, 0},
    {Prim::kRsqrt, dnnl::algorithm::eltwise_pow, 1, -0.5f}};
inline const std::pair<Prim, dnnl::algorithm> kBinary[] = {
    {Prim::kAdd, dnnl::algorithm::binary_add}, {Prim::kSub, dnnl::algorithm::binary_sub},
    {Prim::kMul, dnnl::algorithm::binary_mul}, {Prim::kDiv, dnnl::algorithm::binary_div},
    {Prim::kMax, dnnl::algorithm::binary_max}, {Prim::kMin, dnnl::algorithm::binary_min}};

// An f32 descriptor of `shape` in row-major order (rank 0: one element).
dnnl::memory::desc row_major(const Dims& shape);

// A binary op's operands as oneDNN's binary takes them: the one of the output's shape first (a
// commutative op's two swap; `swapped`), the other broadcasting along size-1 dims (rank 0: all 1),
// with `also` (a fused chain's other operands) collapsed alike (CollapsedDims). Nothing where
// oneDNN's binary cannot read them.
struct BinaryOperands {
  Dims s0, s1;  // s0 is the output's dims too
  bool swapped = false;
};
std::optional<BinaryOperands> binary_operands(dnnl::algorithm algorithm, Dims s0, Dims s1, const Dims& out,
                                              std::vector<Dims> also = {});

}  // namespace rematkit_onednn
