#include "emitter.hpp"

namespace rematkit::autodiff {

ValueId Emitter::emit(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params) {
  return emit_all(role, prim, std::move(inputs), std::move(params)).at(0);
}

std::vector<ValueId> Emitter::emit_all(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params) {
  FlatEquation eqn;
  eqn.prim = prim;
  eqn.params = std::move(params);
  eqn.inputs = std::move(inputs);
  eqn.role = role;
  eqn.region = region_;
  eqn.scope = scope_;
  eqn.jit = jit_;
  eqn.origin = origin_;
  eqn.where = where_;
  return graph_.add_equation(std::move(eqn)).outputs;
}

ValueId Emitter::literal(double value, DType dtype) {
  Value v;
  v.type = Type{dtype, {}, MemorySpace::kDevice};
  v.origin = ValueOrigin::kLiteral;
  v.literal = value;
  return graph_.add_value(std::move(v));
}

ValueId Emitter::full(double value, ValueId like, EqnRole role) {
  const Type t = type(like);
  return emit(role, Prim::kBroadcastInDim, {literal(value, t.dtype)}, broadcast_in_dim_params(t.shape, {}));
}

ValueId Emitter::broadcast_to(ValueId x, const Shape& shape) {
  if (this->shape(x) == shape) return x;
  std::vector<int64_t> dims;
  for (int i = 0; i < type(x).rank(); ++i) dims.push_back(i);  // same rank, size-1 dims expand
  return linear(Prim::kBroadcastInDim, {x}, broadcast_in_dim_params(shape, dims));
}

ValueId Emitter::unbroadcast(ValueId ct, const Shape& shape) {
  const Shape from = this->shape(ct);
  if (from == shape) return ct;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (shape.empty() || (shape[i] == 1 && from[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  ValueId summed = linear(Prim::kReduceSum, {ct}, reduce_params(axes));
  if (this->shape(summed) == shape) return summed;
  return linear(Prim::kReshape, {summed}, reshape_params(shape));
}

}  // namespace rematkit::autodiff
