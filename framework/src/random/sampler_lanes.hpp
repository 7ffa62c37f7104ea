// The samplers' per-element float32 math without branches, so that a loop over elements vectorizes:
// xla_math.cpp's xla_log, xla_log1p and xla_erf_inv with every operation, its order and its fused
// multiply-adds kept, each branch computed on every lane and the one the scalar code takes selected.
// The same bits as xla_math.cpp's functions for every input (tests/flax/parallel_draw_test.cpp
// checks every input normal and truncated_normal can see); those stay the reference.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace rematkit::random::lanes {

inline constexpr float kSqrt2 = 1.41421356237309504880f;  // float32(sqrt(2)) = 1.4142135381698608

// uniform's mantissa construction: 23 random bits under exponent 0 give [1, 2), minus 1 exactly.
inline float uniform(uint32_t bits, float minval, float span) {
  const float unit = std::bit_cast<float>((bits >> 9) | 0x3F800000u) - 1.0f;
  return std::max(minval, std::fmaf(unit, span, minval));
}

// xla_log: Cephes' polynomial as Eigen's plog evaluates it; the special inputs selected last.
inline float log(float input) {
  constexpr float kMinNormal = std::bit_cast<float>(0x00800000u);
  // fmax(input, kMinNormal) written as a select, which is the same for NaN (both give kMinNormal).
  const float clamped = input > kMinNormal ? input : kMinNormal;
  const uint32_t bits = std::bit_cast<uint32_t>(clamped);
  float x = std::bit_cast<float>((bits & ~0x7f800000u) | std::bit_cast<uint32_t>(0.5f));
  float e = 1.0f + static_cast<float>(static_cast<int32_t>(bits >> 23) - 0x7f);
  const bool below = x < 0.707106781186547524f;
  const float kept = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + kept;
  const float x2 = x * x;
  const float x3 = x2 * x;
  float y = std::fmaf(7.0376836292E-2f, x, -1.1514610310E-1f);
  float y1 = std::fmaf(-1.2420140846E-1f, x, +1.4249322787E-1f);
  float y2 = std::fmaf(+2.0000714765E-1f, x, -2.4999993993E-1f);
  y = std::fmaf(y, x, 1.1676998740E-1f);
  y1 = std::fmaf(y1, x, -1.6668057665E-1f);
  y2 = std::fmaf(y2, x, +3.3333331174E-1f);
  y = std::fmaf(y, x3, y1);
  y = std::fmaf(y, x3, y2);
  y = std::fmaf(y, x3, e * -2.12194440e-4f);
  x = std::fmaf(-x2, 0.5f, x);
  x = x + y;
  float result = std::fmaf(e, 0.693359375f, x);
  // xla_log's early returns, the first taken winning: selected in reverse order.
  result = std::fabs(input) == std::numeric_limits<float>::infinity() ? input : result;
  result = input == 0.0f ? -std::numeric_limits<float>::infinity() : result;
  return input != input || input < 0.0f ? std::numeric_limits<float>::quiet_NaN() : result;
}

// xla_log1p: Cephes' rational for |x| < sqrt(2) - 1, else log(1 + x); both computed.
inline float log1p(float x) {
  constexpr float kNumerator[] = {4.5270000862445199635215E-5f, 4.9854102823193375972212E-1f,
                                  6.5787325942061044846969E0f,  2.9911919328553073277375E1f,
                                  6.0949667980987787057556E1f,  5.7112963590585538103336E1f,
                                  2.0039553499201281259648E1f};
  constexpr float kDenominator[] = {1.f, 1.5062909083469192043167E1f, 8.3047565967967209469434E1f,
                                    2.2176239823732856465394E2f, 3.0909872225312059774938E2f,
                                    2.1642788614495947685003E2f, 6.0118660497603843919306E1f};
  // Horner from 0, as xla_math.cpp's horner_from_zero; unrolled, or the caller's loop cannot vectorize.
  float numerator = 0.0f, denominator = 0.0f;
#pragma GCC unroll 7
  for (float c : kNumerator) numerator = std::fmaf(numerator, x, c);
#pragma GCC unroll 7
  for (float c : kDenominator) denominator = std::fmaf(denominator, x, c);
  const float x2 = x * x;
  const float near_zero = x + std::fmaf(-0.5f, x2, (x * x2) * (numerator / denominator));
  const float far = log(x + 1.0f);
  return std::fabs(x) < 0.41421356237309504880f ? near_zero : far;
}

// xla_erf_inv: Giles' two polynomials, the coefficients of the lane's branch selected one by one.
inline float erf_inv(float x) {
  constexpr float kCentral[] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f,
                                -4.39150654e-06f, 0.00021858087f, -0.00125372503f,
                                -0.00417768164f, 0.246640727f,   1.50140941f};
  constexpr float kTail[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                             -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                             0.00943887047f,   1.00167406f,     2.83297682f};
  const float w = -log1p(x * -x);
  const bool central = w < 5.0f;
  const float shifted = central ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = central ? kCentral[0] : kTail[0];
#pragma GCC unroll 8
  for (size_t i = 1; i < 9; ++i) p = std::fmaf(p, shifted, central ? kCentral[i] : kTail[i]);
  const float infinite = std::copysign(std::numeric_limits<float>::infinity(), x);
  return std::fabs(x) == 1.0f ? infinite : p * x;
}

}  // namespace rematkit::random::lanes
