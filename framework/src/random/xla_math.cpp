// Written from the algorithms in reference/flax-init.md section 3 and XLA's sources: every
// `a * b + c` that XLA:CPU contracts (LLVM FPOpFusion::Fast on FMA hardware) is a std::fmaf here,
// and every other operation rounds to float on its own.
#include "rematkit/random/xla_math.hpp"

#include <bit>
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <limits>

namespace rematkit::random {
namespace {

// Horner from the highest coefficient, starting at 0 as XLA's EvaluatePolynomial does.
template <size_t N>
float horner_from_zero(float x, const float (&coefficients)[N]) {
  float p = 0.0f;
  for (float c : coefficients) p = std::fmaf(p, x, c);
  return p;
}

}  // namespace

float xla_erf(float x) {
  if (std::fabs(x) >= 3.832506856900711f) return std::copysign(1.0f, x);
  static constexpr float kP[] = {0.00022905065861350646f, 0.0034082910107109506f, 0.050955695062380861f,
                                 0.18520832239976145f, 1.128379143519084f};
  static constexpr float kQ[] = {-1.1791602954361697e-7f, 2.3547966471313185e-5f, 0.0010179625278914885f,
                                 0.014070470171167667f, 0.11098505178285362f, 0.49746925110067538f, 1.0f};
  const float x2 = x * x;
  return x * horner_from_zero(x2, kP) / horner_from_zero(x2, kQ);
}

float xla_log(float input) {
  if (std::isnan(input) || input < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (input == 0.0f) return -std::numeric_limits<float>::infinity();
  if (std::isinf(input)) return input;
  // Split into a mantissa in [0.5, 1) and an exponent (denormals are cut off, as Eigen does).
  const float clamped = std::fmax(input, std::bit_cast<float>(0x00800000u));
  const uint32_t bits = std::bit_cast<uint32_t>(clamped);
  float x = std::bit_cast<float>((bits & ~0x7f800000u) | std::bit_cast<uint32_t>(0.5f));
  float e = 1.0f + static_cast<float>(static_cast<int32_t>(bits >> 23) - 0x7f);
  // Shift the mantissa to [sqrt(1/2), sqrt(2)) and centre it on 0.
  const bool below = x < 0.707106781186547524f;
  const float kept = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + kept;
  const float x2 = x * x;
  const float x3 = x2 * x;
  // Cephes' degree-8 polynomial in three interleaved parts, as Eigen's plog writes it.
  float y = std::fmaf(7.0376836292E-2f, x, -1.1514610310E-1f);
  float y1 = std::fmaf(-1.2420140846E-1f, x, +1.4249322787E-1f);
  float y2 = std::fmaf(+2.0000714765E-1f, x, -2.4999993993E-1f);
  y = std::fmaf(y, x, 1.1676998740E-1f);
  y1 = std::fmaf(y1, x, -1.6668057665E-1f);
  y2 = std::fmaf(y2, x, +3.3333331174E-1f);
  y = std::fmaf(y, x3, y1);
  y = std::fmaf(y, x3, y2);
  y = std::fmaf(y, x3, e * -2.12194440e-4f);  // y * x3 + e * q1: the first product is contracted
  x = std::fmaf(-x2, 0.5f, x);
  x = x + y;
  return std::fmaf(e, 0.693359375f, x);
}

float xla_log1p(float x) {
  static constexpr float kNumerator[] = {4.5270000862445199635215E-5f, 4.9854102823193375972212E-1f,
                                         6.5787325942061044846969E0f,  2.9911919328553073277375E1f,
                                         6.0949667980987787057556E1f,  5.7112963590585538103336E1f,
                                         2.0039553499201281259648E1f};
  static constexpr float kDenominator[] = {1.f, 1.5062909083469192043167E1f, 8.3047565967967209469434E1f,
                                           2.2176239823732856465394E2f, 3.0909872225312059774938E2f,
                                           2.1642788614495947685003E2f, 6.0118660497603843919306E1f};
  if (!(std::fabs(x) < 0.41421356237309504880f)) return xla_log(x + 1.0f);
  const float x2 = x * x;
  const float ratio = horner_from_zero(x, kNumerator) / horner_from_zero(x, kDenominator);
  return x + std::fmaf(-0.5f, x2, (x * x2) * ratio);
}

float xla_erf_inv(float x) {
  static constexpr float kCentral[] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f,
                                       -4.39150654e-06f, 0.00021858087f, -0.00125372503f,
                                       -0.00417768164f, 0.246640727f,   1.50140941f};
  static constexpr float kTail[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                    0.00943887047f,   1.00167406f,     2.83297682f};
  if (std::fabs(x) == 1.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  float w = -xla_log1p(x * -x);
  const bool central = w < 5.0f;
  const float* c = central ? kCentral : kTail;
  w = central ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = std::fmaf(p, w, c[i]);
  return p * x;
}

}  // namespace rematkit::random
