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
  return emit(role, Prim::kBroadcastInDim, {literal(value, t.dtype)}, broadcast_params(t.shape, {}));
}

ValueId Emitter::broadcast_to(ValueId x, const Shape& shape) {
  if (this->shape(x) == shape) return x;
  std::vector<int64_t> dims;
  for (int i = 0; i < type(x).rank(); ++i) dims.push_back(i);  // same rank, size-1 dims expand
  return linear(Prim::kBroadcastInDim, {x}, broadcast_params(shape, dims));
}

ValueId Emitter::unbroadcast(ValueId ct, const Shape& shape) {
  const Shape from = this->shape(ct);
  if (from == shape) return ct;
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (shape.empty() || (shape[i] == 1 && from[i] != 1)) axes.push_back(static_cast<int64_t>(i));
  ValueId summed = linear(Prim::kReduceSum, {ct}, axes_params(axes));
  if (this->shape(summed) == shape) return summed;
  return linear(Prim::kReshape, {summed}, reshape_params(shape));
}

Params axes_params(const std::vector<int64_t>& axes) {
  Params p;
  p.set("axes", ParamValue::of_ints(axes));
  return p;
}

Params broadcast_params(const Shape& shape, const std::vector<int64_t>& dims) {
  Params p;
  p.set("shape", ParamValue::of_ints(shape));
  p.set("broadcast_dimensions", ParamValue::of_ints(dims));
  return p;
}

Params reshape_params(const Shape& shape) {
  Params p;
  p.set("new_sizes", ParamValue::of_ints(shape));
  p.set("dimensions", ParamValue::none());
  return p;
}

Params transpose_params(const std::vector<int64_t>& permutation) {
  Params p;
  p.set("permutation", ParamValue::of_ints(permutation));
  return p;
}

Params dot_params(const DotDims& dims) {
  Params p;
  p.set("dimension_numbers", dot_dims_value(dims));
  return p;
}

Params pow_params(int64_t y) {
  Params p;
  p.set("y", ParamValue::of_int(y));
  return p;
}

Params convert_params(DType dtype) {
  Params p;
  p.set("new_dtype", ParamValue::of_ident(dtype == DType::kF32 ? "float32" : dtype == DType::kI32 ? "int32" : "bool"));
  return p;
}

}  // namespace rematkit::autodiff
