#include "layers.hpp"

#include <cmath>
#include <numbers>

#include "rematkit/primitive_params.hpp"

namespace rematkit::flax {
namespace {

Atom lit(double v, DType dtype) { return ProgramBuilder::literal(v, dtype); }

}  // namespace

Atom keep_last(ProgramBuilder& b, Atom reduced, const Shape& like) {
  Shape kept = like;
  kept.back() = 1;
  std::vector<int64_t> dims(kept.size() - 1);
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
  return b.emit1(Prim::kBroadcastInDim, {reduced}, broadcast_in_dim_params(kept, dims));
}

Atom layer_norm(ProgramBuilder& b, Atom x, Atom scale, Atom bias, double epsilon) {
  const Shape s = b.type_of(x).shape;
  const DType dt = b.type_of(x).dtype;
  const double n = static_cast<double>(s.back());
  const Params last = reduce_params({static_cast<int64_t>(s.size()) - 1});
  const Atom mean = b.emit1(Prim::kDiv, {b.emit1(Prim::kReduceSum, {x}, last), lit(n, dt)});
  const Atom mean2 = b.emit1(Prim::kDiv, {b.emit1(Prim::kReduceSum, {b.emit1(Prim::kSquare, {x})}, last), lit(n, dt)});
  const Atom var = b.emit1(Prim::kMax, {lit(0.0, dt), b.emit1(Prim::kSub, {mean2, b.emit1(Prim::kSquare, {mean})})});
  const Atom centred = b.emit1(Prim::kSub, {x, keep_last(b, mean, s)});
  const Atom inv = b.emit1(Prim::kRsqrt, {b.emit1(Prim::kAdd, {keep_last(b, var, s), lit(epsilon, dt)})});
  Shape ones(s.size() - 1, 1);
  ones.push_back(s.back());
  auto as_row = [&](Atom p) { return ones.size() == 1 ? p : b.emit1(Prim::kReshape, {p}, reshape_params(ones)); };
  Atom y = b.emit1(Prim::kMul, {centred, inv});
  y = b.emit1(Prim::kMul, {y, as_row(scale)});
  return b.emit1(Prim::kAdd, {y, as_row(bias)});
}

Atom gelu(ProgramBuilder& b, Atom x, bool approximate) {
  const DType dt = b.type_of(x).dtype;
  if (!approximate) {
    const Atom arg = b.emit1(Prim::kMul, {b.emit1(Prim::kNeg, {x}), lit(std::sqrt(0.5), dt)});
    return b.emit1(Prim::kMul, {b.emit1(Prim::kMul, {lit(0.5, dt), x}), b.emit1(Prim::kErfc, {arg})});
  }
  const Atom cube = b.emit1(Prim::kIntegerPow, {x}, integer_pow_params(3));
  const Atom inner = b.emit1(Prim::kAdd, {x, b.emit1(Prim::kMul, {lit(0.044715, dt), cube})});
  const Atom t = b.emit1(Prim::kTanh, {b.emit1(Prim::kMul, {lit(std::sqrt(2.0 / std::numbers::pi), dt), inner})});
  const Atom cdf = b.emit1(Prim::kMul, {lit(0.5, dt), b.emit1(Prim::kAdd, {lit(1.0, dt), t})});
  return b.emit1(Prim::kMul, {x, cdf});
}

Atom silu(ProgramBuilder& b, Atom x) { return b.emit1(Prim::kMul, {x, b.emit1(Prim::kLogistic, {x})}); }

}  // namespace rematkit::flax
