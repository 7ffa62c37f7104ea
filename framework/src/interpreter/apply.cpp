// Dispatch from a primitive to its reference kernel, and whole-program evaluation.
#include <optional>

#include "kernels.hpp"
#include "rematkit/interpreter.hpp"

namespace rematkit {

std::vector<Tensor> apply_primitive(Prim prim, const Params& params, const std::vector<const Tensor*>& in,
                                    const std::vector<Type>& out_types, Arithmetic arithmetic) {
  const Type& out = out_types.at(0);
  const SourceLocation nowhere;
  if (is_binary_elementwise(prim)) return {kernels::binary(prim, *in[0], *in[1], out, arithmetic)};
  if (is_unary_elementwise(prim)) return {kernels::unary(prim, params, *in[0], out, arithmetic)};
  switch (prim) {
    case Prim::kSelectN: return {kernels::select_n(in, out)};
    case Prim::kDotGeneral:
      return {kernels::dot_general(param_dot_dims(params, nowhere), *in[0], *in[1], out, arithmetic)};
    case Prim::kReduceSum: case Prim::kReduceMax:
      return {kernels::reduce(prim, param_ints(params, "axes", nowhere), *in[0], out, arithmetic)};
    case Prim::kBroadcastInDim:
      return {kernels::broadcast_in_dim(param_ints(params, "broadcast_dimensions", nowhere), *in[0], out)};
    case Prim::kReshape: case Prim::kSqueeze: return {Tensor{out, in[0]->data}};
    case Prim::kTranspose: return {kernels::transpose(param_ints(params, "permutation", nowhere), *in[0], out)};
    case Prim::kSoftmax: return {kernels::softmax(param_int(params, "axis", nowhere), *in[0], arithmetic)};
    default: break;
  }
  internal_error("apply_primitive: no kernel for " + std::string(prim_name(prim)));
}

std::vector<Tensor> evaluate_program(const Program& program, const std::vector<Tensor>& consts,
                                     const std::vector<Tensor>& args, Arithmetic arithmetic) {
  if (consts.size() != program.constvars.size() || args.size() != program.invars.size())
    internal_error("evaluate_program: wrong number of constants or arguments");
  std::vector<std::optional<Tensor>> env(program.vars.size());
  for (size_t i = 0; i < consts.size(); ++i) env[program.constvars[i]] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[program.invars[i]] = args[i];
  auto value_of = [&](const Atom& a) {
    return a.is_literal() ? Tensor::filled(a.type, a.literal) : *env[a.var];
  };
  for (const Equation& eqn : program.eqns) {
    std::vector<Tensor> inputs;
    for (const Atom& a : eqn.inputs) inputs.push_back(value_of(a));
    std::vector<Tensor> outputs;
    if (const Program* body = eqn.body()) {
      const size_t n_consts = body->constvars.size();
      std::vector<Tensor> body_consts(inputs.begin(), inputs.begin() + static_cast<long>(n_consts));
      std::vector<Tensor> body_args(inputs.begin() + static_cast<long>(n_consts), inputs.end());
      outputs = evaluate_program(*body, body_consts, body_args, arithmetic);
    } else {
      std::vector<const Tensor*> ptrs;
      for (const Tensor& t : inputs) ptrs.push_back(&t);
      std::vector<Type> out_types;
      for (int v : eqn.outputs) out_types.push_back(program.vars[v].type);
      outputs = apply_primitive(eqn.prim, eqn.params, ptrs, out_types, arithmetic);
    }
    for (size_t i = 0; i < eqn.outputs.size(); ++i) env[eqn.outputs[i]] = std::move(outputs[i]);
  }
  std::vector<Tensor> results;
  for (const Atom& a : program.outvars) results.push_back(value_of(a));
  return results;
}

}  // namespace rematkit
