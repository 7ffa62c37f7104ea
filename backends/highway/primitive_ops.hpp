// Which of the Highway backend's elementwise kernels (kernels.hpp) runs a primitive: shared by the
// kernels of single equations (highway_backend.cpp) and of fused ones (fused_elementwise.cpp).
#pragma once
#include <optional>
#include <utility>

#include "highway/kernels.hpp"
#include "rematkit/plugin/primitive_table.hpp"

namespace rematkit::hwy_backend {

// Name, stop_gradient, reshape and squeeze only copy their operand's elements.
inline constexpr std::pair<Prim, Unary> kUnaries[] = {
    {Prim::kNeg, Unary::kNeg},   {Prim::kExp, Unary::kExp},     {Prim::kLog, Unary::kLog},
    {Prim::kSin, Unary::kSin},   {Prim::kCos, Unary::kCos},     {Prim::kTanh, Unary::kTanh},
    {Prim::kLogistic, Unary::kLogistic}, {Prim::kSqrt, Unary::kSqrt}, {Prim::kRsqrt, Unary::kRsqrt},
    {Prim::kSquare, Unary::kSquare}, {Prim::kRelu, Unary::kRelu}, {Prim::kErf, Unary::kErf}, {Prim::kName, Unary::kCopy},
    {Prim::kStopGradient, Unary::kCopy}, {Prim::kReshape, Unary::kCopy}, {Prim::kSqueeze, Unary::kCopy}};
inline constexpr std::pair<Prim, Binary> kBinaries[] = {{Prim::kAdd, Binary::kAdd}, {Prim::kSub, Binary::kSub},
                                                        {Prim::kMul, Binary::kMul}, {Prim::kDiv, Binary::kDiv},
                                                        {Prim::kMax, Binary::kMax}, {Prim::kMin, Binary::kMin}};
inline constexpr std::pair<Prim, Compare> kCompares[] = {{Prim::kGt, Compare::kGt}, {Prim::kGe, Compare::kGe},
                                                         {Prim::kLt, Compare::kLt}, {Prim::kLe, Compare::kLe},
                                                         {Prim::kEq, Compare::kEq}, {Prim::kNe, Compare::kNe}};

// On u32 or i32 lanes; the arithmetic shift on i32 alone.
inline constexpr std::pair<Prim, Bitwise> kBitwises[] = {
    {Prim::kAnd, Bitwise::kAnd}, {Prim::kOr, Bitwise::kOr}, {Prim::kXor, Bitwise::kXor},
    {Prim::kShiftLeft, Bitwise::kShiftLeft}, {Prim::kShiftRightLogical, Bitwise::kShiftRightLogical},
    {Prim::kShiftRightArithmetic, Bitwise::kShiftRightArithmetic}};

template <typename Op, size_t N>
std::optional<Op> op_of(const std::pair<Prim, Op> (&table)[N], Prim p) {
  for (const auto& [prim, op] : table)
    if (prim == p) return op;
  return std::nullopt;
}

}  // namespace rematkit::hwy_backend
