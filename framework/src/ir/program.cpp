#include "rematkit/ir/program.hpp"

namespace rematkit {

const Program* Equation::body() const {
  if (!has_body(prim)) return nullptr;
  const ParamValue* v = params.find(std::string(body_param(prim)));
  return v && v->kind == ParamValue::Kind::kProgram ? v->program.get() : nullptr;
}

bool operator==(const Equation& a, const Equation& b) {
  return a.prim == b.prim && a.params == b.params && a.inputs == b.inputs && a.outputs == b.outputs;
}

bool operator==(const Program& a, const Program& b) {
  return a.vars == b.vars && a.constvars == b.constvars && a.invars == b.invars && a.eqns == b.eqns &&
         a.outvars == b.outvars;
}

}  // namespace rematkit
