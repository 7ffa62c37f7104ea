#include "verifier.hpp"

#include "rematkit/ir/control_flow_params.hpp"
#include "rematkit/ir/nesting_limit.hpp"
#include "rematkit/ir/primitive_params.hpp"

namespace rematkit {
namespace {

void verify_call(const Program& program, const Equation& eqn) {
  const Program* body = eqn.body();
  if (!body)
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " needs a " + std::string(body_param(eqn.prim)) + "={...} parameter");
  const size_t n_in = body->constvars.size() + body->invars.size();
  if (eqn.inputs.size() != n_in)
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " passes " + std::to_string(eqn.inputs.size()) +
                           " operand(s) to a jaxpr that takes " + std::to_string(n_in));
  for (size_t i = 0; i < n_in; ++i) {
    int binder = i < body->constvars.size() ? body->constvars[i] : body->invars[i - body->constvars.size()];
    const Type& want = body->vars[binder].type;
    const Type& got = program.type_of(eqn.inputs[i]);
    if (want.dtype != got.dtype || want.shape != got.shape)
      fail_at(eqn.where, "operand " + std::to_string(i + 1) + " of " + std::string(prim_name(eqn.prim)) + " is " +
                             got.str() + " but its jaxpr's binder '" + body->vars[binder].name + "' is " + want.str());
  }
  if (eqn.outputs.size() != body->outvars.size())
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " binds " + std::to_string(eqn.outputs.size()) +
                           " output(s) but its jaxpr returns " + std::to_string(body->outvars.size()));
  for (size_t i = 0; i < eqn.outputs.size(); ++i) {
    const Type& want = body->type_of(body->outvars[i]);
    const Var& out = program.vars[eqn.outputs[i]];
    if (want.dtype != out.type.dtype || want.shape != out.type.shape)
      fail_at(eqn.where, "output '" + out.name + "' is declared " + out.type.str() + " but " +
                             std::string(prim_name(eqn.prim)) + "'s jaxpr returns " + want.str());
  }
}

// One equation's output types against what its primitive computes (a call: against its body,
// which is verified first).
void verify_equation(const Program& program, const Equation& eqn, std::vector<std::string>* problems) {
  std::vector<Type> inputs;
  for (const Atom& a : eqn.inputs) inputs.push_back(program.type_of(a));
  if (is_control_flow(eqn.prim)) {  // its sub-programs first: the type rule reads their binders
    check_params(eqn.prim, eqn.params, eqn.where);
    for (const Program* sub : sub_programs(eqn.params)) verify_program(*sub, problems);
  }
  if (has_body(eqn.prim)) {
    check_params(eqn.prim, eqn.params, eqn.where);
    verify_program(*eqn.body(), problems);
    verify_call(program, eqn);
    return;
  }
  std::vector<Type> computed = infer_types(eqn.prim, eqn.params, inputs, eqn.where);
  if (computed.size() != eqn.outputs.size())
    fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " has " + std::to_string(computed.size()) +
                           " output(s), the equation binds " + std::to_string(eqn.outputs.size()));
  for (size_t i = 0; i < computed.size(); ++i) {
    const Var& out = program.vars[eqn.outputs[i]];
    // Memory space is a property of where a residual is kept, not of what the primitive computes.
    if (computed[i].dtype != out.type.dtype || computed[i].shape != out.type.shape)
      fail_at(eqn.where, std::string(prim_name(eqn.prim)) + " of " + types_str(inputs) + " computes " +
                             computed[i].str() + " but '" + out.name + "' is declared " + out.type.str());
  }
}

}  // namespace

void verify_program(const Program& program, std::vector<std::string>* problems) {
  static thread_local int depth = 0;  // sub-programs are verified before the equation that holds them
  const NestingGuard nesting(depth, "programs (in the verifier)", program);
  for (const Equation& eqn : program.eqns) {
    if (!problems) {
      verify_equation(program, eqn, nullptr);
      continue;
    }
    try {
      verify_equation(program, eqn, problems);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      problems->push_back(e.what());
    }
  }
}

}  // namespace rematkit
