#include "emitter.hpp"

#include <algorithm>

#include "rematkit/interpreter/interpreter.hpp"

namespace rematkit::autodiff {

ValueId Emitter::emit(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params) {
  return emit_all(role, prim, std::move(inputs), std::move(params)).at(0);
}

std::vector<ValueId> Emitter::emit_all(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params) {
  // A rule's equation on literals alone, with a scalar result, is a constant: JAX computes it when
  // it traces the rule (the ln 2 of exp2's JVP) and the program gets a literal.
  if (role != EqnRole::kPrimal && !inputs.empty() && !has_body(prim) &&
      std::all_of(inputs.begin(), inputs.end(), [&](ValueId v) { return graph_.values.at(v).origin == ValueOrigin::kLiteral; })) {
    std::vector<Tensor> operands;
    std::vector<Type> in_types;
    for (ValueId v : inputs) {
      operands.push_back(Tensor::filled(type(v), graph_.values[v].literal, graph_.values[v].literal_imag));
      in_types.push_back(type(v));
    }
    const std::vector<Type> out_types = infer_types(prim, params, in_types, where_);
    if (std::all_of(out_types.begin(), out_types.end(), [](const Type& t) { return t.rank() == 0; })) {
      std::vector<const Tensor*> pointers;
      for (const Tensor& t : operands) pointers.push_back(&t);
      std::vector<ValueId> out;
      for (const Tensor& t : apply_primitive(prim, params, pointers, out_types, Arithmetic::kFloat32))
        out.push_back(literal(t.data.at(0), t.type.dtype, t.imag.empty() ? 0.0 : t.imag.at(0)));
      return out;
    }
  }
  return graph_.add_equation(equation(role, prim, std::move(inputs), std::move(params))).outputs;
}

FlatEquation Emitter::equation(EqnRole role, Prim prim, std::vector<ValueId> inputs, Params params) const {
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
  return eqn;
}

std::vector<ValueId> Emitter::emit_part(EqnRole role, ControlFlowPart part, std::shared_ptr<const ScanLinearization> scan,
                                        std::shared_ptr<const CondLinearization> cond, std::vector<ValueId> inputs,
                                        const Params& params, const std::vector<Type>& out_types) {
  FlatEquation eqn = equation(role, origin_, std::move(inputs), params);
  eqn.scan = std::move(scan);
  eqn.cond = std::move(cond);
  eqn.part = part;
  return graph_.add_equation(std::move(eqn), out_types).outputs;
}

ValueId Emitter::literal(double value, DType dtype, double imag) {
  Value v;
  v.type = Type{dtype, {}, MemorySpace::kDevice};
  v.origin = ValueOrigin::kLiteral;
  v.literal = round_to_dtype(value, dtype, Arithmetic::kFloat32);  // a literal holds a value of its dtype
  if (is_complex(dtype)) v.literal_imag = round_to_dtype(imag, dtype, Arithmetic::kFloat32);
  return graph_.add_value(std::move(v));
}

ValueId Emitter::full(double value, ValueId like, EqnRole role) {
  const Type t = type(like);
  if (t.rank() == 0) return literal(value, t.dtype);  // lax.full of shape () is a scalar, not an equation
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
