#include <cmath>

#include "kernels.hpp"

namespace rematkit::kernels {
namespace {

double apply_unary(Prim prim, double x, int64_t power) {
  switch (prim) {
    case Prim::kNeg: return -x;
    case Prim::kExp: return std::exp(x);
    case Prim::kLog: return std::log(x);
    case Prim::kSin: return std::sin(x);
    case Prim::kCos: return std::cos(x);
    case Prim::kTanh: return std::tanh(x);
    case Prim::kLogistic: return 1.0 / (1.0 + std::exp(-x));
    case Prim::kSqrt: return std::sqrt(x);
    case Prim::kRsqrt: return 1.0 / std::sqrt(x);
    case Prim::kSquare: return x * x;
    case Prim::kIntegerPow: {
      double r = 1.0;
      for (int64_t i = 0; i < (power < 0 ? -power : power); ++i) r *= x;
      return power < 0 ? 1.0 / r : r;
    }
    case Prim::kRelu: return std::isnan(x) ? x : (x > 0 ? x : 0.0);
    case Prim::kStopGradient: case Prim::kName: case Prim::kConvertElementType: return x;
    default: break;
  }
  internal_error("not a unary primitive: " + std::string(prim_name(prim)));
}

double apply_binary(Prim prim, double a, double b, DType dtype) {
  switch (prim) {
    case Prim::kAdd: return a + b;
    case Prim::kSub: return a - b;
    case Prim::kMul: return a * b;
    case Prim::kDiv:
      if (dtype == DType::kI32) return b == 0 ? 0 : std::trunc(a / b);
      return a / b;
    case Prim::kMax: return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
    case Prim::kMin: return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
    case Prim::kGt: return a > b;
    case Prim::kGe: return a >= b;
    case Prim::kLt: return a < b;
    case Prim::kLe: return a <= b;
    case Prim::kEq: return a == b;
    case Prim::kNe: return a != b;
    default: break;
  }
  internal_error("not a binary primitive: " + std::string(prim_name(prim)));
}

// Index of operand `x` (rank 0, or same rank with size-1 dims) for output position `out_index`.
int64_t broadcast_index(const Shape& x_shape, const std::vector<int64_t>& x_strides, const Shape& out_shape,
                        int64_t out_index) {
  if (x_shape.empty()) return 0;
  int64_t idx = 0;
  for (int d = static_cast<int>(out_shape.size()) - 1; d >= 0; --d) {
    int64_t coord = out_index % out_shape[d];
    out_index /= out_shape[d];
    if (x_shape[d] != 1) idx += coord * x_strides[d];
  }
  return idx;
}

}  // namespace

Tensor unary(Prim prim, const Params& params, const Tensor& x, const Type& out, Arithmetic arithmetic) {
  const int64_t power = prim == Prim::kIntegerPow ? param_int(params, "y", {}) : 0;
  Tensor r{out, std::vector<double>(x.data.size())};
  for (size_t i = 0; i < x.data.size(); ++i)
    r.data[i] = round_to_dtype(apply_unary(prim, x.data[i], power), out.dtype, arithmetic);
  return r;
}

Tensor binary(Prim prim, const Tensor& a, const Tensor& b, const Type& out, Arithmetic arithmetic) {
  Tensor r{out, std::vector<double>(static_cast<size_t>(out.num_elements()))};
  const bool same = a.type.shape == out.shape && b.type.shape == out.shape;
  const auto sa = row_major_strides(a.type.shape), sb = row_major_strides(b.type.shape);
  for (int64_t i = 0; i < r.size(); ++i) {
    int64_t ia = same ? i : broadcast_index(a.type.shape, sa, out.shape, i);
    int64_t ib = same ? i : broadcast_index(b.type.shape, sb, out.shape, i);
    r.data[i] = round_to_dtype(apply_binary(prim, a.data[ia], b.data[ib], a.type.dtype), out.dtype, arithmetic);
  }
  return r;
}

Tensor select_n(const std::vector<const Tensor*>& in, const Type& out) {
  const Tensor& pred = *in[0];
  const int64_t cases = static_cast<int64_t>(in.size()) - 1;
  Tensor r{out, std::vector<double>(static_cast<size_t>(out.num_elements()))};
  for (int64_t i = 0; i < r.size(); ++i) {
    int64_t which = static_cast<int64_t>(pred.data[pred.type.shape.empty() ? 0 : i]);
    which = which < 0 ? 0 : (which >= cases ? cases - 1 : which);  // out-of-range predicates clamp
    r.data[i] = in[1 + which]->data[i];
  }
  return r;
}

}  // namespace rematkit::kernels
