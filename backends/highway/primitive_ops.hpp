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
// the smallest f32 subnormal, so its f32 is +0: a masked attention score's exp needs no recompute;
// nor does exp of 0 or another tiny operand (the row's largest score, less itself).
constexpr HalfCheck kMoves{}, kExact{HalfCheck::Kind::kExact}, kPicks{HalfCheck::Kind::kPicks};
constexpr HalfCheck approximate(int32_t ulps) { return HalfCheck{.kind = HalfCheck::Kind::kApprox, .ulps = ulps}; }
constexpr HalfCheck kExpCheck{.kind = HalfCheck::Kind::kApprox, .ulps = 8, .min_input = 0, .max_input = 88, .zero_below = -104};
inline constexpr std::pair<Prim, HalfCheck> kHalfChecks[] = {
    {Prim::kExp, kExpCheck},
    {Prim::kLog, {.kind = HalfCheck::Kind::kApprox, .ulps = 16, .negative_input = true}},
    {Prim::kSin, {.kind = HalfCheck::Kind::kApprox, .ulps = 16, .tiny = 0x1p-4f, .max_input = 256}},
    {Prim::kCos, {.kind = HalfCheck::Kind::kApprox, .ulps = 16, .tiny = 0x1p-4f, .max_input = 256}},
    {Prim::kLogistic, {.kind = HalfCheck::Kind::kApprox, .ulps = 16, .max_input = 88, .zero_below = -104}},
    {Prim::kTanh, approximate(24)},     {Prim::kRsqrt, approximate(8)}, {Prim::kErf, approximate(16)},
    {Prim::kNeg, kExact},               {Prim::kSqrt, kExact},          {Prim::kSquare, kExact},
    {Prim::kAdd, kExact},               {Prim::kSub, kExact},           {Prim::kMul, kExact},
    {Prim::kDiv, kExact},               {Prim::kIntegerPow, kExact},    {Prim::kPow, kExact},
    {Prim::kMax, kPicks},               {Prim::kMin, kPicks},           {Prim::kClamp, kPicks},
    {Prim::kRelu, kPicks}};
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
