// The interpreter: each primitive through the reference math (framework/reference_math, the same code the
// reference backend runs), rounded to its dtype under the chosen arithmetic; and whole programs.
#include <optional>

#include "control_flow.hpp"
#include "mapped_call.hpp"
#include "rematkit/interpreter/simulated_mesh.hpp"
#include "rematkit/interpreter/interpreter.hpp"
#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/reference_math/reference_kernels.hpp"

namespace rematkit {
namespace {

// The reference math's view of Params (verified programs: the reads cannot fail).
struct ParamsReader {
  const Params& params;
  SourceLocation where;
  int64_t integer(const char* key) const { return param_int(params, key, where); }
  int64_t integer_or(const char* key, int64_t otherwise) const {
    return params.find(key) ? param_int(params, key, where) : otherwise;
  }
  std::vector<int64_t> ints(const char* key) const { return param_ints(params, key, where); }
  std::vector<int64_t> ints_or_none(const char* key) const { return param_ints_or_none(params, key, where); }
  bool boolean(const char* key) const { return params.find(key) && param_bool(params, key, where); }
  std::vector<PaddingDim> padding_config() const { return rematkit::padding_config(params, where); }
  IndexingDims indexing_dims(Prim prim) const { return rematkit::indexing_dims(prim, params, where); }
  IndexMode index_mode() const { return rematkit::index_mode(params, where); }
  std::optional<double> fill_value() const { return rematkit::fill_value(params, where); }
  DotDims dot_dims() const { return rematkit::dot_dims(params, where); }
  bool rounds_to_nearest_even() const { return rematkit::rounds_to_nearest_even(params, where); }
  ConvParams conv_params() const { return rematkit::conv_params(params, where); }
  WindowParams window_params() const { return rematkit::window_params(params, where); }
  bool selects_max() const { return select_prim(params, where) == Prim::kGe; }
  FftKind fft_kind() const { return rematkit::fft_kind(params, where); }
};

}  // namespace

std::vector<Tensor> apply_primitive(Prim prim, const Params& params, const std::vector<const Tensor*>& in,
                                    const std::vector<Type>& out_types, Arithmetic arithmetic) {
  if (is_effect(prim)) return {};  // a debug print computes nothing: a no-op here (the step executor prints)
  if (is_collective(prim)) return {run_collective(prim, params, in, out_types.at(0), arithmetic)};
  if (is_host_call(prim))
    fail("cannot run " + std::string(prim_name(prim)) + ": it calls a Python function the program does not carry");
  if (!reference::has_kernel(prim))
    fail("apply_primitive: " + std::string(prim_name(prim)) + " has a sub-program; evaluate the program instead");
  const reference::KernelParams decoded = reference::decode_params(prim, ParamsReader{params, {}});
  std::vector<reference::Input> inputs;
  for (const Tensor* t : in) inputs.push_back({t->data, t->type.shape, dtype_code(t->type.dtype), t->imag});
  const Type& type = out_types.at(0);
  Tensor out = Tensor::filled(type, 0.0);
  reference::compute(prim, decoded, inputs, {out.data, type.shape, dtype_code(type.dtype), out.imag});
  for (double& v : out.data) v = round_to_dtype(v, type.dtype, arithmetic);
  for (double& v : out.imag) v = round_to_dtype(v, type.dtype, arithmetic);
  return {std::move(out)};
}

std::vector<Tensor> evaluate_program(const Program& program, const std::vector<Tensor>& consts,
                                     const std::vector<Tensor>& args, Arithmetic arithmetic) {
  static thread_local int depth = 0;  // calls recurse here, control flow through control_flow.cpp
  const NestingGuard nesting(depth, "programs (in the interpreter)", program);
  if (consts.size() != program.constvars.size() || args.size() != program.invars.size())
    fail("evaluate_program: the program takes " + std::to_string(program.constvars.size()) + " constants and " +
         std::to_string(program.invars.size()) + " arguments, not " + std::to_string(consts.size()) + " and " +
         std::to_string(args.size()));
  std::vector<std::optional<Tensor>> env(program.vars.size());
  for (size_t i = 0; i < consts.size(); ++i) env[program.constvars[i]] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[program.invars[i]] = args[i];
  auto value_of = [&](const Atom& a) {
    return a.is_literal() ? Tensor::filled(a.type, a.literal, a.literal_imag) : *env[a.var];
  };
  for (const Equation& eqn : program.eqns) {
    std::vector<Tensor> inputs;
    for (const Atom& a : eqn.inputs) inputs.push_back(value_of(a));
    std::vector<Tensor> outputs;
    if (is_control_flow(eqn.prim)) {
      outputs = interpreter::evaluate_control_flow(eqn, inputs, arithmetic);
    } else if (is_mapped_call(eqn.prim)) {
      outputs = interpreter::evaluate_mapped_call(eqn, inputs, arithmetic);
    } else if (const Program* body = eqn.body()) {
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
