// Which of the Highway backend's elementwise kernels (kernels.hpp) runs a primitive: shared by the
// kernels of single equations (highway_backend.cpp) and of fused ones (fused_elementwise.cpp).
#pragma once
#include <limits>
#include <optional>
#include <utility>

#include "highway/half_precision.hpp"
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

// How a bf16 or f16 result of each op is checked before it is rounded (half_precision.hpp). The
// approximate ones' bounds are several times the f32 kernels' measured error
// (tests/backends/highway_accuracy_test.cpp: exp 1 ulp, log 4, sin and cos 3, tanh 5, logistic 3,
// erf 4; rsqrt is a division of a square root, under 2), and tests/backends/
// highway_half_precision_test.cpp checks every bf16 and f16 operand against the reference. sin and
// cos lose relative accuracy near their zeros and past a few hundred radians (their argument
// reduction), so small results and large operands are recomputed there. Highway's exp is valid up
// to about 88 (exp and logistic recompute operands past it, whose results are infinite, 0 or 1),
// and its log of a negative operand is not a NaN. Below -104, e^x (and so logistic) is under half
// the smallest f32 subnormal, so its f32 is +0: a masked attention score's exp needs no recompute.
constexpr HalfCheck kMoves{}, kExact{HalfCheck::Kind::kExact}, kPicks{HalfCheck::Kind::kPicks};
constexpr HalfCheck approximate(int32_t ulps, float tiny = 0x1p-120f, float max_input = 3.4e38f, bool negative = false,
                                float zero_below = -std::numeric_limits<float>::infinity()) {
  return HalfCheck{HalfCheck::Kind::kApprox, ulps, tiny, 0x1p-120f, max_input, negative, zero_below};
}
inline constexpr std::pair<Prim, HalfCheck> kHalfChecks[] = {
    {Prim::kExp, approximate(8, 0x1p-120f, 88, false, -104)}, {Prim::kLog, approximate(16, 0x1p-120f, 3.4e38f, true)},
    {Prim::kSin, approximate(16, 0x1p-4f, 256)}, {Prim::kCos, approximate(16, 0x1p-4f, 256)},
    {Prim::kTanh, approximate(24)},     {Prim::kLogistic, approximate(16, 0x1p-120f, 88, false, -104)},
    {Prim::kRsqrt, approximate(8)},     {Prim::kErf, approximate(16)},  {Prim::kNeg, kExact},
    {Prim::kSqrt, kExact},              {Prim::kSquare, kExact},        {Prim::kRelu, kPicks},
    {Prim::kAdd, kExact},               {Prim::kSub, kExact},           {Prim::kMul, kExact},
    {Prim::kDiv, kExact},               {Prim::kMax, kPicks},           {Prim::kMin, kPicks},
    {Prim::kClamp, kPicks},             {Prim::kIntegerPow, kExact},    {Prim::kPow, kExact}};
// Everything else that runs in bf16 or f16 only moves values (kMoves): copies, conversions, select_n.
inline HalfCheck half_check(Prim p) {
  for (const auto& [prim, check] : kHalfChecks)
    if (prim == p) return check;
  return kMoves;
}

template <typename Op, size_t N>
std::optional<Op> op_of(const std::pair<Prim, Op> (&table)[N], Prim p) {
  for (const auto& [prim, op] : table)
    if (prim == p) return op;
  return std::nullopt;
}

}  // namespace rematkit::hwy_backend
