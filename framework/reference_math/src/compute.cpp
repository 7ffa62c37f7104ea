// One case per primitive: its math, as lax defines it, in double.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include "loops.hpp"
#include "rematkit/reference_math/element_values.hpp"

namespace rematkit::reference {
namespace {

double integer_power(double x, int64_t y) {  // lax.integer_pow: repeated multiplication
  double r = 1.0;
  for (int64_t i = 0; i < (y < 0 ? -y : y); ++i) r *= x;
  return y < 0 ? 1.0 / r : r;
}

// lax.max/min propagate NaN.
double maximum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b); }
double minimum(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b); }

// The inverse of erf in double: Giles' approximation as a start, then Newton steps on std::erf,
// which converge to double precision in two or three.
double erf_inverse(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return NAN;
  if (y == 1 || y == -1) return y * INFINITY;
  const double w = -std::log((1 - y) * (1 + y));
  double x;
  if (w < 5) {
    const double v = w - 2.5;
    x = y * (1.50140941 + v * (0.246640727 + v * (-0.00417768164 + v * (-0.00125372503 + v * 0.00021858087))));
  } else {
    const double v = std::sqrt(w) - 3;
    x = y * (2.83297682 + v * (1.00167406 + v * (0.00943887047 + v * (-0.0076224613 + v * 0.00573950773))));
  }
  for (int i = 0; i < 4; ++i) x -= (std::erf(x) - y) / (2 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  return x;
}

// Integer ops on values held as doubles (exact values of the operand's integer dtype), through
// their two's-complement bits in the dtype's width.
template <typename Fn>
void map_integer_bits(const Input& a, const Input& b, const Output& out, Fn fn) {
  const IntegerFormat f = integer_format(a.dtype);
  map_binary(a, b, out, [&](double x, double y) { return integer_from_bits(fn(integer_bits(x, f), integer_bits(y, f), f), f); });
}

// XLA's shifts: a shift by a negative amount or by the width or more gives 0 (or, for an arithmetic
// shift right, the sign: 0 or -1).
uint64_t shift_left(uint64_t a, uint64_t b, IntegerFormat f) { return b >= static_cast<uint64_t>(f.bits) ? 0 : a << b; }
uint64_t shift_right_logical(uint64_t a, uint64_t b, IntegerFormat f) {
  return b >= static_cast<uint64_t>(f.bits) ? 0 : a >> b;
}
double shift_right_arithmetic(double a, double b, IntegerFormat f) {
  if (b < 0 || b >= f.bits) return a < 0 ? -1 : 0;
  return std::floor(a / std::ldexp(1.0, static_cast<int>(b)));  // exact: a power-of-two divisor
}

// lax.sign: -1, 0 or 1 (NaN stays NaN, -0.0 stays -0.0).
double sign_of(double x) { return std::isnan(x) || x == 0 ? x : (x > 0 ? 1.0 : -1.0); }

// lax.reduce_precision on an f32 value, by XLA's bit recipe: round the mantissa to `mantissa` bits
// (to nearest, ties to even), then send exponents beyond an `exponent`-bit format to infinity and
// those at or below its smallest normal to a signed zero. A NaN stays NaN while a mantissa bit
// is left to hold it.
double reduce_precision(double value, int64_t exponent, int64_t mantissa) {
  constexpr int kMantissa = 23, kExponent = 8, kBias = 127;
  if (exponent >= kExponent && mantissa >= kMantissa) return value;  // f32 or wider: nothing to drop
  const float f = static_cast<float>(value);
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (mantissa < kMantissa) {
    const int drop = kMantissa - static_cast<int>(mantissa);
    const uint32_t last_kept = 1u << drop;
    const uint32_t bias = ((bits & last_kept) >> drop) + ((last_kept >> 1) - 1);
    bits = (bits + bias) & ~(last_kept - 1);
  }
  if (exponent < kExponent) {
    const uint32_t exponent_mask = 0xFFu << kMantissa, sign = bits & 0x80000000u;
    const uint32_t reduced_bias = (1u << (exponent - 1)) - 1;
    const uint32_t e = bits & exponent_mask;
    if (e > (kBias + reduced_bias) << kMantissa) bits = sign | exponent_mask;
    else if (e <= (kBias - reduced_bias) << kMantissa) bits = sign;
  }
  if (std::isnan(f)) return mantissa > 0 ? value : std::numeric_limits<double>::infinity();
  return std::bit_cast<float>(bits);
}

// The same bits read as the other dtype (of the same size).
double bitcast(double x, int32_t from, int32_t to) {
  unsigned char bytes[8] = {};
  store_element(bytes, from, 0, x);
  return load_element(bytes, to, 0);
}

// convert_element_type: to an integer dtype from a float, toward zero and saturating (XLA's
// conversion); everything else is the caller's rounding to the output dtype (integers wrap).
double convert(double x, int32_t from, int32_t to) {
  if (is_integer_code(to) && !is_integer_code(from) && from != RK_DTYPE_BOOL) return saturate_to_integer(x, integer_format(to));
  return x;
}

void copy(const Input& x, const Output& out) {
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = x.data[i];
}

}  // namespace

bool has_kernel(Prim prim) {
  return !has_body(prim) && !is_control_flow(prim) && !is_effect(prim) && !is_host_call(prim) && !is_mapped_call(prim) &&
         !is_collective(prim);
}

void compute(Prim prim, const KernelParams& p, std::span<const Input> in, const Output& out) {
  bool complex = is_complex_code(out.dtype);
  for (const Input& x : in) complex |= is_complex_code(x.dtype);
  if (complex) return compute_complex(prim, p, in, out);
  switch (prim) {
    case Prim::kAdd: return map_binary(in[0], in[1], out, [](double a, double b) { return a + b; });
    case Prim::kSub: return map_binary(in[0], in[1], out, [](double a, double b) { return a - b; });
    case Prim::kMul:
      if (is_integer_code(in[0].dtype))  // wraps: the product of the bits, exact past 2^53
        return map_integer_bits(in[0], in[1], out, [](uint64_t a, uint64_t b, IntegerFormat) { return a * b; });
      return map_binary(in[0], in[1], out, [](double a, double b) { return a * b; });
    case Prim::kDiv:
      if (is_integer_code(in[0].dtype))  // toward zero; x / 0 is -1 (all ones), as XLA defines it
        return map_binary(in[0], in[1], out, [](double a, double b) { return b == 0 ? -1 : std::trunc(a / b); });
      return map_binary(in[0], in[1], out, [](double a, double b) { return a / b; });
    case Prim::kMax: return map_binary(in[0], in[1], out, maximum);
    case Prim::kMin: return map_binary(in[0], in[1], out, minimum);
    case Prim::kAddAny: return map_binary(in[0], in[1], out, [](double a, double b) { return a + b; });
    case Prim::kPow: return map_binary(in[0], in[1], out, [](double a, double b) { return std::pow(a, b); });
    case Prim::kAtan2: return map_binary(in[0], in[1], out, [](double a, double b) { return std::atan2(a, b); });
    case Prim::kRem:  // the sign of the dividend, as C's fmod; x rem 0 is x for integers (XLA)
      if (is_integer_code(in[0].dtype))
        return map_binary(in[0], in[1], out, [](double a, double b) { return b == 0 ? a : std::fmod(a, b); });
      return map_binary(in[0], in[1], out, [](double a, double b) { return std::fmod(a, b); });
    case Prim::kAnd:
      if (in[0].dtype == RK_DTYPE_BOOL) return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a && b; });
      return map_integer_bits(in[0], in[1], out, [](uint64_t a, uint64_t b, IntegerFormat) { return a & b; });
    case Prim::kOr:
      if (in[0].dtype == RK_DTYPE_BOOL) return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a || b; });
      return map_integer_bits(in[0], in[1], out, [](uint64_t a, uint64_t b, IntegerFormat) { return a | b; });
    case Prim::kXor:
      if (in[0].dtype == RK_DTYPE_BOOL) return map_binary(in[0], in[1], out, [](double a, double b) -> double { return (a != 0) != (b != 0); });
      return map_integer_bits(in[0], in[1], out, [](uint64_t a, uint64_t b, IntegerFormat) { return a ^ b; });
    // A negative shift amount's bits are a huge unsigned amount: past the width, so 0.
    case Prim::kShiftLeft: return map_integer_bits(in[0], in[1], out, shift_left);
    case Prim::kShiftRightLogical: return map_integer_bits(in[0], in[1], out, shift_right_logical);
    case Prim::kShiftRightArithmetic:
      return map_binary(in[0], in[1], out, [f = integer_format(in[0].dtype)](double a, double b) {
        return shift_right_arithmetic(a, b, f);
      });
    case Prim::kGt: return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a > b; });
    case Prim::kGe: return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a >= b; });
    case Prim::kLt: return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a < b; });
    case Prim::kLe: return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a <= b; });
    case Prim::kEq: return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a == b; });
    case Prim::kNe: return map_binary(in[0], in[1], out, [](double a, double b) -> double { return a != b; });
    case Prim::kNeg: return map_unary(in[0], out, [](double x) { return -x; });
    case Prim::kExp: return map_unary(in[0], out, [](double x) { return std::exp(x); });
    case Prim::kLog: return map_unary(in[0], out, [](double x) { return std::log(x); });
    case Prim::kSin: return map_unary(in[0], out, [](double x) { return std::sin(x); });
    case Prim::kCos: return map_unary(in[0], out, [](double x) { return std::cos(x); });
    case Prim::kTanh: return map_unary(in[0], out, [](double x) { return std::tanh(x); });
    case Prim::kLogistic: return map_unary(in[0], out, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    case Prim::kSqrt: return map_unary(in[0], out, [](double x) { return std::sqrt(x); });
    case Prim::kRsqrt: return map_unary(in[0], out, [](double x) { return 1.0 / std::sqrt(x); });
    case Prim::kSquare: return map_unary(in[0], out, [](double x) { return x * x; });
    case Prim::kIntegerPow: return map_unary(in[0], out, [y = p.integer](double x) { return integer_power(x, y); });
    case Prim::kRelu: return map_unary(in[0], out, [](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); });
    case Prim::kAbs: return map_unary(in[0], out, [](double x) { return std::fabs(x); });
    case Prim::kSign: return map_unary(in[0], out, sign_of);
    case Prim::kFloor: return map_unary(in[0], out, [](double x) { return std::floor(x); });
    case Prim::kCeil: return map_unary(in[0], out, [](double x) { return std::ceil(x); });
    case Prim::kRound:  // RoundingMethod.TO_NEAREST_EVEN (jnp.round) or AWAY_FROM_ZERO (lax.round's default)
      if (p.integer == 1) return map_unary(in[0], out, [](double x) { return std::nearbyint(x); });
      return map_unary(in[0], out, [](double x) { return std::round(x); });
    case Prim::kIsFinite: return map_unary(in[0], out, [](double x) -> double { return std::isfinite(x); });
    case Prim::kExp2: return map_unary(in[0], out, [](double x) { return std::exp2(x); });
    case Prim::kExpm1: return map_unary(in[0], out, [](double x) { return std::expm1(x); });
    case Prim::kLog1p: return map_unary(in[0], out, [](double x) { return std::log1p(x); });
    case Prim::kTan: return map_unary(in[0], out, [](double x) { return std::tan(x); });
    case Prim::kErf: return map_unary(in[0], out, [](double x) { return std::erf(x); });
    case Prim::kErfc: return map_unary(in[0], out, [](double x) { return std::erfc(x); });
    case Prim::kErfInv: return map_unary(in[0], out, erf_inverse);
    case Prim::kNot:
      if (in[0].dtype == RK_DTYPE_BOOL) return map_unary(in[0], out, [](double x) -> double { return x == 0; });
      return map_unary(in[0], out, [f = integer_format(in[0].dtype)](double x) { return integer_from_bits(~integer_bits(x, f), f); });
    case Prim::kClamp:  // min(max(x, lo), hi), NaN propagating
      return map_ternary(in[0], in[1], in[2], out, [](double lo, double x, double hi) { return minimum(maximum(x, lo), hi); });
    // The value passes through; the caller's rounding to the output dtype does the conversion.
    case Prim::kStopGradient: case Prim::kName: case Prim::kReshape: case Prim::kSqueeze:
      return copy(in[0], out);
    case Prim::kConvertElementType:
      return map_unary(in[0], out, [&](double x) { return convert(x, in[0].dtype, out.dtype); });
    case Prim::kReducePrecision:
      return map_unary(in[0], out, [&p](double x) { return reduce_precision(x, p.integer, p.mantissa_bits); });
    case Prim::kCopy: case Prim::kOptimizationBarrier: case Prim::kShardingConstraint: case Prim::kReshard:
      return copy(in[0], out);
    case Prim::kBitcastConvertType: return map_unary(in[0], out, [&](double x) { return bitcast(x, in[0].dtype, out.dtype); });
    case Prim::kSelectN: return select_n(in, out);
    case Prim::kDotGeneral: return dot_general(p.dims, in[0], in[1], out);
    case Prim::kReduceSum: return reduce(Reduction::kSum, p.axes, in[0], out);
    case Prim::kReduceProd: return reduce(Reduction::kProd, p.axes, in[0], out);
    case Prim::kReduceMax: return reduce(Reduction::kMax, p.axes, in[0], out);
    case Prim::kReduceMin: return reduce(Reduction::kMin, p.axes, in[0], out);
    case Prim::kArgMax: return arg_extreme(true, p.axes.at(0), in[0], out);
    case Prim::kArgMin: return arg_extreme(false, p.axes.at(0), in[0], out);
    case Prim::kCumsum: return cumulative(Cumulative::kSum, p.integer, p.reverse, in[0], out);
    case Prim::kCumprod: return cumulative(Cumulative::kProd, p.integer, p.reverse, in[0], out);
    case Prim::kCummax: return cumulative(Cumulative::kMax, p.integer, p.reverse, in[0], out);
    case Prim::kCummin: return cumulative(Cumulative::kMin, p.integer, p.reverse, in[0], out);
    case Prim::kCumlogsumexp: return cumulative(Cumulative::kLogSumExp, p.integer, p.reverse, in[0], out);
    case Prim::kIota: return iota(p.integer, out);
    case Prim::kConcatenate: return concatenate(p.integer, in, out);
    case Prim::kSlice: return slice(p.starts, p.strides, in[0], out);
    case Prim::kDynamicSlice: return dynamic_slice(in, out);
    case Prim::kDynamicUpdateSlice: return dynamic_update_slice(in, out);
    case Prim::kPad: return pad(p.padding, in[0], in[1], out);
    case Prim::kRev: return rev(p.axes, in[0], out);
    case Prim::kGather: return gather(p, in[0], in[1], out);
    case Prim::kScatterAdd: return scatter_add(p, in[0], in[1], in[2], out);
    case Prim::kConvGeneralDilated: return conv_general_dilated(p.conv, in[0], in[1], out);
    case Prim::kReduceWindowSum: return reduce_window(WindowReduction::kSum, p.window, in[0], out);
    case Prim::kReduceWindowMax: return reduce_window(WindowReduction::kMax, p.window, in[0], out);
    case Prim::kReduceWindowMin: return reduce_window(WindowReduction::kMin, p.window, in[0], out);
    case Prim::kSelectAndGatherAdd: return select_and_gather_add(p.selects_max, p.window, in[0], in[1], out);
    case Prim::kSelectAndScatterAdd: return select_and_scatter_add(p.selects_max, p.window, in[0], in[1], out);
    case Prim::kBroadcastInDim: return broadcast_in_dim(p.axes, in[0], out);
    case Prim::kTranspose: return transpose(p.axes, in[0], out);
    case Prim::kSoftmax: return softmax(p.integer, in[0], out);
    case Prim::kRandomSeed: return random_seed(in[0], out);
    case Prim::kRandomWrap: return random_wrap(in[0], out);
    case Prim::kRandomUnwrap: return random_unwrap(in[0], out);
    case Prim::kRandomSplit: return random_split(p.axes, in[0], out);
    case Prim::kRandomFoldIn: return random_fold_in(in[0], in[1], out);
    case Prim::kRandomBits: return random_bits(p.integer, p.axes, in[0], out);
    case Prim::kRandomClone: return copy(in[0], out);
    case Prim::kThreefry2x32: return threefry2x32(p.output, in, out);
    case Prim::kSort: return sort(p.integer, p.num_keys, p.output, in, out);
    case Prim::kSplit: {  // piece `output` is the slice after the pieces before it
      Dims starts(in[0].shape.size(), 0), strides(in[0].shape.size(), 1);
      for (int64_t i = 0; i < p.output; ++i) starts[static_cast<size_t>(p.integer)] += p.axes[static_cast<size_t>(i)];
      return slice(starts, strides, in[0], out);
    }
    case Prim::kPjit: case Prim::kCheckpoint: case Prim::kCustomJvpCall: case Prim::kCustomVjpCall:
    case Prim::kScan: case Prim::kCond: case Prim::kWhile:
    case Prim::kDebugCallback:  // no output to compute: the step executor runs it (--debug-prints)
    case Prim::kPureCallback: case Prim::kIoCallback:  // Python functions the program does not carry
    case Prim::kShardMap: case Prim::kXlaPmap:  // a body per device: interpreter/mesh_evaluation.cpp
    case Prim::kShardMapIn: case Prim::kShardMapOut: case Prim::kPsum: case Prim::kPmax: case Prim::kPmin:
    case Prim::kAllGather: case Prim::kReduceScatter: case Prim::kPpermute: case Prim::kAllToAll:
    case Prim::kAxisIndex: case Prim::kPbroadcast: case Prim::kPvary:  // between devices: interpreter/collectives.cpp
    case Prim::kReal: case Prim::kImag: case Prim::kComplex: case Prim::kConj: case Prim::kFft:  // complex_kernels.cpp
      break;
  }
  throw std::invalid_argument("no reference kernel for " + std::string(prim_name(prim)) +
                              " (calls are inlined before anything runs)");
}

}  // namespace rematkit::reference
