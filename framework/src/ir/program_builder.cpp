#include "rematkit/ir/program_builder.hpp"

#include "rematkit/ir/params.hpp"

namespace rematkit {

int ProgramBuilder::new_var(const std::string& name, const Type& type) {
  if (!names_.insert(name).second) fail("program builder: variable '" + name + "' is defined twice");
  program_.vars.push_back(Var{name, type, {}});
  return static_cast<int>(program_.vars.size()) - 1;
}

// a, b, ..., z, ba, bb, ... as JAX names variables, skipping names already taken.
std::string ProgramBuilder::fresh_name() {
  while (true) {
    size_t n = next_name_++;
    std::string name;
    do {
      name.insert(name.begin(), static_cast<char>('a' + n % 26));
      n /= 26;
    } while (n > 0);
    if (!names_.count(name) && name != "in" && name != "let" && name != "lambda") return name;
  }
}

Atom ProgramBuilder::argument(const std::string& name, const Type& type) {
  const int v = new_var(name, type);
  program_.invars.push_back(v);
  return Atom::of_var(v);
}

Atom ProgramBuilder::constant(const std::string& name, const Type& type) {
  const int v = new_var(name, type);
  program_.constvars.push_back(v);
  return Atom::of_var(v);
}

Atom ProgramBuilder::literal(double value, DType dtype) {
  return Atom::of_literal(value, Type{dtype, {}, MemorySpace::kDevice});
}

std::vector<Atom> ProgramBuilder::emit(Prim prim, std::vector<Atom> inputs, Params params) {
  std::vector<Type> in;
  for (const Atom& a : inputs) in.push_back(program_.type_of(a));
  const SourceLocation where{"<builder>", static_cast<int>(program_.eqns.size()) + 1, 0};
  Equation eqn{prim, std::move(params), std::move(inputs), {}, where};
  std::vector<Atom> outs;
  for (const Type& t : infer_types(prim, eqn.params, in, where)) {
    eqn.outputs.push_back(new_var(fresh_name(), t));
    outs.push_back(Atom::of_var(eqn.outputs.back()));
  }
  program_.eqns.push_back(std::move(eqn));
  return outs;
}

std::vector<Atom> ProgramBuilder::call(Prim prim, Program body, std::vector<Atom> inputs, Params params) {
  if (!has_body(prim))
    fail("program builder: call() builds pjit, checkpoint and custom_jvp_call, not " + std::string(prim_name(prim)) +
         " (use emit())");
  if (inputs.size() != body.constvars.size() + body.invars.size())
    fail("program builder: the call passes " + std::to_string(inputs.size()) + " operands to a body that takes " +
         std::to_string(body.constvars.size() + body.invars.size()));
  std::vector<Type> out_types;
  for (const Atom& a : body.outvars) out_types.push_back(body.type_of(a));
  Params all;
  const bool custom = prim == Prim::kCustomJvpCall || prim == Prim::kCustomVjpCall;  // they print call_jaxpr=
  all.set(custom ? "call_jaxpr" : "jaxpr", ParamValue::of_program(std::make_shared<const Program>(std::move(body))));
  for (auto& [k, v] : params.entries) all.set(k, std::move(v));
  Equation eqn{prim, std::move(all), std::move(inputs), {},
               {"<builder>", static_cast<int>(program_.eqns.size()) + 1, 0}};
  std::vector<Atom> outs;
  for (const Type& t : out_types) {
    eqn.outputs.push_back(new_var(fresh_name(), t));
    outs.push_back(Atom::of_var(eqn.outputs.back()));
  }
  program_.eqns.push_back(std::move(eqn));
  return outs;
}

void ProgramBuilder::reorder_arguments(const std::vector<size_t>& order) {
  std::vector<bool> seen(program_.invars.size(), false);
  bool permutation = order.size() == seen.size();
  for (size_t i : order) {
    permutation = permutation && i < seen.size() && !seen[i];
    if (permutation) seen[i] = true;
  }
  if (!permutation) fail("program builder: reorder_arguments needs a permutation of the arguments' positions");
  std::vector<int> reordered;
  for (size_t i : order) reordered.push_back(program_.invars[i]);
  program_.invars = std::move(reordered);
}

Program ProgramBuilder::finish(std::vector<Atom> outputs) {
  program_.outvars = std::move(outputs);
  return std::move(program_);
}

}  // namespace rematkit
