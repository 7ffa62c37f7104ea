// One case per primitive: its math, as lax defines it, in double.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "loops.hpp"

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

void copy(const Input& x, const Output& out) {
  for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = x.data[i];
}

}  // namespace

bool has_kernel(Prim prim) { return !has_body(prim); }

void compute(Prim prim, const KernelParams& p, std::span<const Input> in, const Output& out) {
  switch (prim) {
    case Prim::kAdd: return map_binary(in[0], in[1], out, [](double a, double b) { return a + b; });
    case Prim::kSub: return map_binary(in[0], in[1], out, [](double a, double b) { return a - b; });
    case Prim::kMul: return map_binary(in[0], in[1], out, [](double a, double b) { return a * b; });
    case Prim::kDiv:
      if (in[0].dtype == RK_DTYPE_I32)  // integer division rounds toward zero; x / 0 is 0 here
        return map_binary(in[0], in[1], out, [](double a, double b) { return b == 0 ? 0 : std::trunc(a / b); });
      return map_binary(in[0], in[1], out, [](double a, double b) { return a / b; });
    case Prim::kMax: return map_binary(in[0], in[1], out, maximum);
    case Prim::kMin: return map_binary(in[0], in[1], out, minimum);
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
    // The value passes through; the caller's rounding to the output dtype does the conversion.
    case Prim::kStopGradient: case Prim::kName: case Prim::kConvertElementType: case Prim::kReshape:
    case Prim::kSqueeze:
      return copy(in[0], out);
    case Prim::kSelectN: return select_n(in, out);
    case Prim::kDotGeneral: return dot_general(p.dims, in[0], in[1], out);
    case Prim::kReduceSum: return reduce(false, p.axes, in[0], out);
    case Prim::kReduceMax: return reduce(true, p.axes, in[0], out);
    case Prim::kBroadcastInDim: return broadcast_in_dim(p.axes, in[0], out);
    case Prim::kTranspose: return transpose(p.axes, in[0], out);
    case Prim::kSoftmax: return softmax(p.integer, in[0], out);
    case Prim::kPjit: case Prim::kCheckpoint: break;
  }
  throw std::invalid_argument("no reference kernel for " + std::string(prim_name(prim)) +
                              " (calls are inlined before anything runs)");
}

}  // namespace rematkit::reference
